#!/usr/bin/env python3
"""A trained run as a PyTorch model (docs/python.md#a-pytorch-model-of-a-run): pelab's twin with the run's
weights, its logits beside pelab's, and a gradient PyTorch computes that pelab does not expose (the
logit of the answer's first token with respect to the input embeddings' positions). Cells `# %%`:

    PYTHONPATH=build/python /usr/bin/python3 examples/torch_twin.py RUN_DIR
"""
# %%
import sys

import numpy as np
import torch

import pelab

run = pelab.Run(sys.argv[1] if len(sys.argv) > 1 else "runs/quick/encoding.name=rope__train.seed=0")
model, tm = run.model(), run.torch_model()  # the same checkpoint: C++ and PyTorch
print(tm.__class__.__name__, sum(p.numel() for p in tm.parameters()), "parameters")

# %% Logits of held-out examples at twice the training length, both ways.
ex = model.examples(2 * model.train_len, count=4)
want = model.logits(ex["tokens"], ex["positions"])
got = tm(torch.from_numpy(ex["tokens"]), torch.from_numpy(ex["positions"])).detach().numpy()
print(f"max |torch - pelab| = {np.abs(got - want).max():.2e} (logits up to {np.abs(want).max():.1f})")

# %% Anything PyTorch does: here, which earlier tokens the first answer logit is most sensitive to
# (torch_ref.record keeps each layer's tensors and the embeddings' gradient).
from pelab import torch_ref

rec = torch_ref.record(tm)
first = int(np.flatnonzero(ex["mask"][0])[0])
logits = tm(torch.from_numpy(ex["tokens"][:1]), torch.from_numpy(ex["positions"][:1]))
logits[0, first, int(ex["targets"][0, first])].backward()
print("gradient norm per input token:", np.round(rec["embeddings"].grad[0].norm(dim=-1).numpy(), 3))
