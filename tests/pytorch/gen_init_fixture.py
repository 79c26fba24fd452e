#!/usr/bin/python3
"""Samples of PyTorch's default initialization, for pelab's `init = "pytorch"` scheme.

Builds pelab_ref.Model (nn.Linear, nn.Embedding, nn.LayerNorm; the learned position table drawn as
nn.Embedding draws) with torch's defaults untouched, and writes the first MAX_VALUES values of every
parameter (row-major; the values are i.i.d., so a prefix is a fair sample) under pelab's checkpoint
names into tests/fixtures/init_pytorch.safetensors. tests/layers/test_init.cpp compares pelab's
pytorch-scheme draws of the same architecture with them (two-sample KS), so the claim "pelab's pytorch
init is PyTorch's" is checked against torch itself, not against a formula written twice.

Before writing, it checks the formulas the C++ test also uses: Linear weights and biases within
+-1/sqrt(fan_in) and spread like U(-b, b), embeddings like N(0, 1), LayerNorm ones and zeros.
Run with Debian's torch (NOT a pyenv/venv python):
    /usr/bin/python3 tests/pytorch/gen_init_fixture.py
"""
import json
import math
import os

import numpy as np
import torch

import pelab_ref as ref

COMMAND = "/usr/bin/python3 tests/pytorch/gen_init_fixture.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "init_pytorch.safetensors")
# The same architecture tests/layers/test_init.cpp builds (encoding "learned", table of seq_len rows).
CFG = dict(vocab=40, d_model=64, n_layers=2, n_heads=4, d_mlp=256, ln_eps=1e-5, seq_len=32)
MAX_VALUES = 2048
SEED = 0


def check(model):
    named = dict(model.named_parameters())
    for name, p in named.items():
        v = p.detach().double()
        kind = ref.param_kind(name)
        if kind == "norm_gain":
            assert torch.all(v == 1), name
        elif kind == "norm_bias":
            assert torch.all(v == 0), name
        elif kind == "embedding":
            assert abs(v.mean()) < 5 / math.sqrt(v.numel()) and abs(v.std() - 1) < 0.05, (name, v.mean(), v.std())
        else:
            weight = named[name[: -len("bias")] + "weight"] if kind == "bias" else p
            b = 1 / math.sqrt(weight.shape[1])
            assert v.abs().max() <= b, (name, v.abs().max(), b)
            if v.numel() >= 1000:  # U(-b, b) has std b / sqrt(3)
                assert abs(v.std() - b / math.sqrt(3)) < 0.05 * b, (name, v.std(), b / math.sqrt(3))


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    model = ref.Model(CFG, "learned")
    check(model)
    tensors = {}
    for name, p in model.named_parameters():
        tensors[name] = p.detach().reshape(-1)[:MAX_VALUES].numpy().astype(np.float32)
    meta = {
        "config": json.dumps(CFG, sort_keys=True),
        "encoding": "learned",
        "max_values": str(MAX_VALUES),
        "seed": str(SEED),
        "torch_version": torch.__version__,
        "command": COMMAND,
    }
    ref.save_checked(OUT, tensors, meta)
    total = sum(a.size for a in tensors.values())
    print(f"wrote {OUT}: {len(tensors)} tensors, {total} values (torch {torch.__version__})")


if __name__ == "__main__":
    main()
