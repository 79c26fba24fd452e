#!/usr/bin/python3
"""Writes tests/python/fixtures/insides.safetensors, the reference of tests/python/test_insides.py: for each
case of CASES, a tiny run's model (the settings in the metadata) with the PyTorch fixtures' deliberately
large weights (pelab.torch_ref.init_fixture_weights, seeded), a batch (tokens, targets, a mask with zeros,
per-row positions), and what pelab.torch_ref computes from them in float64: the logits, the loss, every
parameter's gradient, the gradient of the token embeddings and each layer's activations (torch_ref.record).
Needs torch and the built module:

    PYTHONPATH=build/python /usr/bin/python3 tests/python/gen_insides_fixture.py [--out FILE]
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

import pelab  # noqa: E402
from pelab import torch_ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "python", "fixtures", "insides.safetensors")
BASE = {"model.n_layers": 2, "train.steps": 1, "eval.lengths": [4], "eval.samples": 4}
# rope: the rotary_qkv fast path; alibi: attention_packed; fox: a content-dependent bias on split heads.
CASES = {"rope": {"encoding.name": "rope"}, "alibi": {"encoding.name": "alibi"}, "fox": {"encoding.name": "fox"}}
B, T = 2, 9
LAYER_KEYS = ("residual", "q", "k", "v", "weights", "attention", "mlp_hidden")


def case_tensors(tmp, config, name, sets, seed):
    run = pelab.train(config, set={**BASE, **sets}, out=os.path.join(tmp, name), quiet=True)
    tm = run.torch_model()
    torch.manual_seed(seed)
    torch_ref.init_fixture_weights(tm)
    weights = {n: p.detach().numpy().astype(np.float32) for n, p in tm.named_parameters()}
    tm = tm.double()
    with torch.no_grad():  # float64 from the float32 weights the C++ model gets
        for n, p in tm.named_parameters():
            p.copy_(torch.from_numpy(weights[n].astype(np.float64)))
    rng = np.random.default_rng(seed)
    V = weights["tok_emb.weight"].shape[0]
    tokens = rng.integers(0, V, size=(B, T)).astype(np.int32)
    targets = rng.integers(0, V, size=(B, T)).astype(np.int32)
    mask = (rng.random((B, T)) < 0.7).astype(np.float32)
    mask[0, 0] = 1
    positions = np.stack([np.arange(T), np.arange(T) + 3]).astype(np.int32)  # row 1 shifted: per-row ids
    rec = torch_ref.record(tm)
    logits = tm(torch.from_numpy(tokens).long(), torch.from_numpy(positions).long())
    loss = torch_ref.masked_ce(logits, torch.from_numpy(targets).long(), torch.from_numpy(mask).double())
    loss.backward()
    out = {f"{name}.weights.{n}": w for n, w in weights.items()}
    out.update({f"{name}.tokens": tokens, f"{name}.targets": targets, f"{name}.mask": mask,
                f"{name}.positions": positions, f"{name}.logits": logits.detach().numpy(),
                f"{name}.loss": loss.detach().numpy().reshape(1),
                f"{name}.embeddings": rec["embeddings"].detach().numpy(),
                f"{name}.embeddings_grad": rec["embeddings"].grad.numpy(),
                f"{name}.final_residual": rec["final_residual"].detach().numpy()})
    out.update({f"{name}.grads.{n}": p.grad.numpy() for n, p in tm.named_parameters()})
    for i, layer in enumerate(rec["layers"]):
        out.update({f"{name}.layers.{i}.{k}": layer[k].detach().numpy() for k in LAYER_KEYS})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=OUT)
    a = p.parse_args()
    tensors, meta = {}, {"base": json.dumps(BASE), "command": "PYTHONPATH=build/python /usr/bin/python3 tests/python/gen_insides_fixture.py"}
    with tempfile.TemporaryDirectory(prefix="pelab-insides-") as tmp:
        config = helpers.tiny_config(tmp)
        for seed, (name, sets) in enumerate(sorted(CASES.items())):
            tensors.update(case_tensors(tmp, config, name, sets, seed + 1))
            meta[name] = json.dumps(sets)
    torch_ref.save_checked(a.out, tensors, meta)
    print(f"wrote {a.out}: {len(CASES)} cases, {len(tensors)} tensors")


if __name__ == "__main__":
    main()
