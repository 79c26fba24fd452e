#!/usr/bin/python3
"""Reference fixtures for pelab's decoder-only model, computed in PyTorch.

Writes tests/fixtures/model_<enc>.safetensors for enc in none, learned, sinusoidal, rope, rope_half:
the parameters (under pelab's checkpoint names), a fixed batch, the logits, the loss, every
parameter's gradient and a 5-step AdamW training run. See tests/pytorch/README.md.

Run with Debian's torch (NOT a pyenv/venv python):
    /usr/bin/python3 tests/pytorch/gen_fixtures.py
"""
import copy
import json
import math
import os
import struct
import sys

import numpy as np
import torch

import pelab_ref as ref

COMMAND = "/usr/bin/python3 tests/pytorch/gen_fixtures.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures")

CFG = dict(vocab=20, d_model=32, n_layers=2, n_heads=4, d_mlp=128, batch=3, seq_len=12,
           ln_eps=1e-5, max_len=16)
ENCODINGS = {  # name -> its parameters (stored as JSON in the metadata)
    "none": {},
    "learned": {"max_len": CFG["max_len"]},
    "sinusoidal": {"base": 10000.0, "layout": "interleaved"},
    "rope": {"base": 10000.0, "fraction": 1.0, "layout": "interleaved"},
    "rope_half": {"base": 10000.0, "fraction": 1.0, "layout": "half"},
}
VARIANT = {"none": ("none", {}), "learned": ("learned", {"max_len": 16}), "sinusoidal": ("sinusoidal", {}),
           "rope": ("rope", {"layout": "interleaved"}), "rope_half": ("rope", {"layout": "half"})}
TRAIN = dict(steps=5, peak_lr=1e-2, min_lr=1e-3, warmup=2, betas=[0.9, 0.999], eps=1e-8,
             weight_decay=0.1, clip_norm=1.0)


def lr_at(s):
    t = TRAIN
    return ref.lr_at(s, t["peak_lr"], t["min_lr"], t["warmup"], t["steps"])


def make_inputs():
    B, T, V = CFG["batch"], CFG["seq_len"], CFG["vocab"]
    tokens = torch.randint(0, V, (B, T))
    targets = torch.randint(0, V, (B, T))
    positions = torch.arange(T).repeat(B, 1)
    positions[2] += 2                                        # row 2 holds positions 2..13
    mask = (torch.rand(B, T) >= 0.25).to(torch.float32)
    targets[mask == 0] = -1
    return tokens, positions, targets, mask


def build_fixture(enc):
    torch.manual_seed(0)
    tokens, positions, targets, mask = make_inputs()
    model = ref.Model(CFG, *VARIANT[enc])
    ref.init_fixture_weights(model)
    names = [n for n, _ in model.named_parameters()]
    params = {n: p.detach().clone() for n, p in model.named_parameters()}

    # The reference outputs come from the same model and float32 weights evaluated in float64: the
    # oracle is then the exact result, and pelab's float32 error is measured alone (a float32 PyTorch
    # result carries rounding errors of its own, as large as pelab's).
    model64 = copy.deepcopy(model).double()
    logits = model64(tokens, positions)
    loss = ref.masked_ce(logits, targets, mask.double())
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model64.named_parameters()}
    del model64

    opt = ref.make_adamw(model, TRAIN["peak_lr"], TRAIN["weight_decay"], TRAIN["betas"], TRAIN["eps"])
    losses, norms, lrs = [], [], []
    for s in range(TRAIN["steps"]):
        opt.zero_grad(set_to_none=True)
        step_loss = ref.masked_ce(model(tokens, positions), targets, mask)
        losses.append(step_loss.item())
        step_loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), TRAIN["clip_norm"]).item())
        lr = lr_at(s)
        lrs.append(lr)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
    with torch.no_grad():
        losses.append(ref.masked_ce(model(tokens, positions), targets, mask).item())

    out = {n: params[n].numpy() for n in names}
    out.update({"grad." + n: grads[n].numpy() for n in names})
    out.update({
        "input.tokens": tokens.to(torch.int32).numpy(),
        "input.positions": positions.to(torch.int32).numpy(),
        "input.targets": targets.to(torch.int32).numpy(),
        "input.mask": mask.numpy(),
        "out.logits": logits.detach().numpy(),
        "out.loss": np.array(loss.item(), dtype=np.float64),
        "train.losses": np.array(losses, dtype=np.float32),
        "train.grad_norms": np.array(norms, dtype=np.float32),
        "train.lrs": np.array(lrs, dtype=np.float32),
    })
    meta = {
        "encoding": enc,
        "encoding_params": json.dumps(ENCODINGS[enc], sort_keys=True),
        "config": json.dumps(CFG, sort_keys=True),
        "train": json.dumps(TRAIN, sort_keys=True),
        "torch_version": torch.__version__,
        "command": COMMAND,
    }
    return out, meta


# ---------------------------------------------------------------- self-checks
def check_encodings():
    """The two RoPE layouts are the same rotation up to a permutation of dims, and the sinusoidal
    table matches the formula written out element by element."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 5, 8, generator=g)
    pos = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
    perm = torch.tensor([0, 4, 1, 5, 2, 6, 3, 7])  # half-layout dim of each interleaved slot
    dims = dict(d_model=32, n_heads=4, head_dim=8, train_len=12)
    rope_i = ref.make_encoding("rope", {"layout": "interleaved"}, dims)
    rope_h = ref.make_encoding("rope", {"layout": "half"}, dims)
    a = rope_i.encode_qk(x[..., perm], x[..., perm], pos, 0)[0]
    b = rope_h.encode_qk(x, x, pos, 0)[0][..., perm]
    assert torch.allclose(a, b, atol=1e-6), "rope layouts disagree"
    pe = ref.sinusoidal_table(torch.tensor([[0, 3, 13]]), 6, 10000.0)[0]
    for r, t in enumerate([0, 3, 13]):
        for j in range(6):
            w = t / 10000.0 ** (2 * (j // 2) / 6)
            want = math.sin(w) if j % 2 == 0 else math.cos(w)
            assert abs(pe[r, j].item() - want) < 1e-6, (t, j)


def check_model():
    """Causality for every encoding; RoPE (and none) see only relative positions, so shifting every
    position by 5 leaves their logits unchanged, while absolute encodings change them."""
    torch.manual_seed(2)
    tokens = torch.randint(0, CFG["vocab"], (2, CFG["seq_len"]))
    pos = torch.arange(CFG["seq_len"]).repeat(2, 1)
    for enc in ENCODINGS:
        model = ref.Model(CFG, *VARIANT[enc])
        ref.init_fixture_weights(model)
        with torch.no_grad():
            base = model(tokens, pos)
            changed = tokens.clone()
            changed[:, 7:] = (changed[:, 7:] + 1) % CFG["vocab"]
            assert torch.equal(model(changed, pos)[:, :7], base[:, :7]), f"{enc}: not causal"
            shifted = model(tokens, pos + 4)
            same = torch.allclose(shifted, base, atol=1e-4)
            assert same == (enc in ("none", "rope", "rope_half")), f"{enc}: shift invariance {same}"


def main():
    if not torch.__version__.startswith("1.13"):
        print(f"warning: fixtures were made with torch 1.13, this is {torch.__version__}", file=sys.stderr)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    check_encodings()
    check_model()
    os.makedirs(OUT_DIR, exist_ok=True)
    for enc in ENCODINGS:
        tensors, meta = build_fixture(enc)
        path = os.path.join(OUT_DIR, f"model_{enc}.safetensors")
        ref.save_checked(path, tensors, meta)
        losses = " ".join(f"{v:.6f}" for v in tensors["train.losses"])
        norms = " ".join(f"{v:.6f}" for v in tensors["train.grad_norms"])
        print(f"{enc:10s} {os.path.getsize(path) / 1024:6.1f} KB  loss {tensors['out.loss']:.6f}")
        print(f"           train.losses     {losses}")
        print(f"           train.grad_norms {norms}")


if __name__ == "__main__":
    main()
