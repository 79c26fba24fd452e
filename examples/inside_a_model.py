#!/usr/bin/env python3
"""A model's insides through pelab's own forward and backward (docs/python.md#the-models-insides): its
weights, each layer's q, k, v, attention weights, residual stream and MLP hidden for inputs of your own,
and the loss with every gradient for a batch. Cells `# %%`:

    PYTHONPATH=build/python /usr/bin/python3 examples/inside_a_model.py RUN_DIR
"""
# %%
import sys

import numpy as np

import pelab

model = pelab.Run(sys.argv[1] if len(sys.argv) > 1 else "runs/quick/encoding.name=rope__train.seed=0").model()
weights = model.weights()  # named as in the checkpoint
print({n: w.shape for n, w in list(weights.items())[:4]}, "...", len(weights), "parameters")

# %% Activations at twice the training length: q and k after the encoding, the weights after the softmax.
ex = model.examples(2 * model.train_len, count=2)
act = model.activations(ex["tokens"], ex["positions"])
last = act["layers"][-1]
print("q", last["q"].shape, "weights", last["weights"].shape, "mlp_hidden", last["mlp_hidden"].shape)
entropy = -(last["weights"] * np.log(last["weights"] + 1e-12)).sum(-1).mean(axis=(0, 2))
print("last layer's attention entropy per head:", np.round(entropy, 3))
print("residual stream norm per layer:", [round(float(np.linalg.norm(l["residual"], axis=-1).mean()), 2)
                                          for l in act["layers"]])

# %% The loss of a batch and its backward, as training computes them.
g = model.gradients(ex["tokens"], ex["targets"], ex["mask"], ex["positions"])
norms = {n: float(np.linalg.norm(v)) for n, v in g["grads"].items()}
print(f"loss {g['loss']:.4f}; largest gradients:", sorted(norms, key=norms.get)[-3:])
print("input-embedding gradient norm per token (row 0):", np.round(np.linalg.norm(g["embeddings_grad"][0], axis=-1), 4))
