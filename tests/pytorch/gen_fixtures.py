#!/usr/bin/python3
"""Reference fixtures for pelab, computed in PyTorch with the model of pelab_ref.py.

Writes into tests/fixtures/:
  model_<fixture>.safetensors, one per entry of FIXTURES (every encoding registered in pelab_ref, some
      with several parameter sets): parameters under pelab's checkpoint names, a fixed batch, the logits,
      the loss, every parameter's gradient and a 5-step AdamW run on that batch;
  trainer_<encoding>.safetensors: a 20-step run of pelab's training loop on a stored stream of batches
      (per-step loss, gradient norm and learning rate, and the final parameters).
See tests/pytorch/README.md. Run with Debian's torch (NOT a pyenv/venv python):
    /usr/bin/python3 tests/pytorch/gen_fixtures.py
"""
import copy
import json
import math
import os
import sys

import numpy as np
import torch

import pelab_ref as ref

COMMAND = "/usr/bin/python3 tests/pytorch/gen_fixtures.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures")

CFG = dict(vocab=20, d_model=32, n_layers=2, n_heads=4, d_mlp=128, batch=3, seq_len=12, ln_eps=1e-5)
FIXTURES = {  # file stem -> (encoding, the parameters given; the metadata records them resolved)
    "none": ("none", {}),
    "learned": ("learned", {"max_len": 16}),
    "sinusoidal": ("sinusoidal", {}),
    "rope": ("rope", {"layout": "interleaved"}),
    "rope_half": ("rope", {"layout": "half"}),
    "rope_partial": ("rope", {"layout": "half", "fraction": 0.5}),  # 4 of 8 dims rotated, 4 pass through
    "alibi": ("alibi", {}),
}
TRAIN = dict(steps=5, peak_lr=1e-2, min_lr=1e-3, warmup=2, betas=[0.9, 0.999], eps=1e-8,
             weight_decay=0.1, clip_norm=1.0)
# The training-loop fixture: pelab's Trainer on a stream of distinct batches, positions 0..T-1 (the
# Trainer's), dropout 0, default decay rule, non-default betas so that the Trainer must pass them on.
# clip_norm sits inside the range of the gradient norms: some steps clip, others do not.
TRAINER = dict(encoding="rope", encoding_params={}, steps=20, batch=4, seq_len=12, schedule="cosine",
               peak_lr=1e-2, min_lr=1e-3, warmup=3, betas=[0.9, 0.95], eps=1e-8, weight_decay=0.1,
               clip_norm=1.5, decay_norm_and_bias=False, decay_embeddings=True, seed=1)


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


def build_fixture(fixture):
    enc, given = FIXTURES[fixture]
    torch.manual_seed(0)
    tokens, positions, targets, mask = make_inputs()
    if ref.ENCODINGS[enc].shared_positions:
        positions[:] = positions[2]                          # one position row for the batch: 2..13
    model = ref.Model(CFG, enc, given)
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
        lrs.append(lr_at(s))
        step_loss, norm = ref.train_step(model, opt, tokens, positions, targets, mask, lrs[-1], TRAIN["clip_norm"])
        losses.append(step_loss)
        norms.append(norm)
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
        "fixture": fixture,
        "encoding": enc,
        "encoding_params": json.dumps(model.pos.p, sort_keys=True),
        "config": json.dumps(CFG, sort_keys=True),
        "train": json.dumps(TRAIN, sort_keys=True),
        "torch_version": torch.__version__,
        "command": COMMAND,
    }
    return out, meta


def make_batch_stream():
    """TRAINER["steps"] batches (S, B, T) of a random next-token stream, a quarter of the targets masked."""
    S, B, T, V = TRAINER["steps"], TRAINER["batch"], TRAINER["seq_len"], CFG["vocab"]
    seq = torch.randint(0, V, (S, B, T + 1))
    tokens, targets = seq[..., :-1].clone(), seq[..., 1:].clone()
    mask = (torch.rand(S, B, T) >= 0.25).to(torch.float32)
    targets[mask == 0] = -1
    return tokens, targets, mask


def build_trainer_fixture():
    """Trainer parity: float32 initial weights, then every step computed in float64 (the exact result
    for those weights and batches, so that the C++ test measures pelab's float32 error alone)."""
    t = TRAINER
    torch.manual_seed(t["seed"])
    tokens, targets, mask = make_batch_stream()
    cfg = dict(CFG, batch=t["batch"], seq_len=t["seq_len"])
    model = ref.Model(cfg, t["encoding"], t["encoding_params"])
    ref.init_fixture_weights(model)
    init = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    model = model.double()
    opt = ref.make_adamw(model, t["peak_lr"], t["weight_decay"], t["betas"], t["eps"],
                         decay_norm_and_bias=t["decay_norm_and_bias"], decay_embeddings=t["decay_embeddings"])
    positions = ref.default_positions(t["batch"], t["seq_len"])
    losses, norms, lrs = [], [], []
    for s in range(t["steps"]):
        lr = ref.lr_at(s, t["peak_lr"], t["min_lr"], t["warmup"], t["steps"], t["schedule"])
        loss, norm = ref.train_step(model, opt, tokens[s], positions, targets[s], mask[s].double(), lr,
                                    t["clip_norm"])
        losses.append(loss)
        norms.append(norm)
        lrs.append(lr)
    clipped = sum(n > t["clip_norm"] for n in norms)
    assert 0 < clipped < t["steps"], f"clipping should act on some steps, not all: {clipped}"
    margin = min(abs(n / t["clip_norm"] - 1) for n in norms)
    assert margin > 1e-3, f"a gradient norm is within {margin:.1e} of clip_norm: the clip decision is fragile"

    out = dict(init)
    out.update({"final." + n: p.detach().to(torch.float32).numpy() for n, p in model.named_parameters()})
    out.update({
        "batch.tokens": tokens.to(torch.int32).numpy(),
        "batch.targets": targets.to(torch.int32).numpy(),
        "batch.mask": mask.numpy(),
        "train.losses": np.array(losses, dtype=np.float64),
        "train.grad_norms": np.array(norms, dtype=np.float64),
        "train.lrs": np.array(lrs, dtype=np.float64),
    })
    meta = {
        "fixture": f"trainer_{t['encoding']}",
        "encoding": t["encoding"],
        "encoding_params": json.dumps(model.pos.p, sort_keys=True),
        "config": json.dumps(cfg, sort_keys=True),
        "train": json.dumps({k: v for k, v in t.items() if k not in ("encoding", "encoding_params")},
                            sort_keys=True),
        "torch_version": torch.__version__,
        "command": COMMAND,
    }
    return out, meta, clipped


# ---------------------------------------------------------------- self-checks
DIMS = dict(d_model=32, n_heads=4, head_dim=8, train_len=12)


def check_encodings():
    """Each encoding against its formula written out another way."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 5, 8, generator=g)
    pos = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
    # The two RoPE layouts are the same rotation up to a permutation of dims.
    perm = torch.tensor([0, 4, 1, 5, 2, 6, 3, 7])  # half-layout dim of each interleaved slot
    a = ref.make_encoding("rope", {"layout": "interleaved"}, DIMS).encode_qk(x[..., perm], x, pos, 0)[0]
    b = ref.make_encoding("rope", {"layout": "half"}, DIMS).encode_qk(x, x, pos, 0)[0][..., perm]
    assert torch.allclose(a, b, atol=1e-6), "rope layouts disagree"
    # A fraction rotates the first dims as RoPE of that head size would, and passes the rest through.
    part = ref.make_encoding("rope", {"layout": "half", "fraction": 0.5}, DIMS).encode_qk(x, x, pos, 0)[0]
    small = ref.make_encoding("rope", {"layout": "half"}, dict(DIMS, head_dim=4)).encode_qk(x[..., :4], x, pos, 0)[0]
    assert torch.equal(part[..., 4:], x[..., 4:]) and torch.allclose(part[..., :4], small, atol=1e-6), "rope fraction"
    # Sinusoidal: PE[t, 2i] = sin(t / base^(2i/d)), PE[t, 2i+1] = cos(same).
    pe = ref.sinusoidal_table(torch.tensor([[0, 3, 13]]), 6, 10000.0)[0]
    for r, t in enumerate([0, 3, 13]):
        for j in range(6):
            w = t / 10000.0 ** (2 * (j // 2) / 6)
            want = math.sin(w) if j % 2 == 0 else math.cos(w)
            assert abs(pe[r, j].item() - want) < 1e-6, (t, j)
    # ALiBi: the paper's slopes (6 heads: 4 geometric, then every other one of 8), bias -m_h |i - j|.
    assert ref.alibi_slopes(4) == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8]
    assert ref.alibi_slopes(6) == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]
    bias = ref.make_encoding("alibi", {"slope_scale": 2.0}, DIMS).attention_bias(pos[:1].repeat(3, 1), 0)
    assert bias.shape == (4, 5, 5) and bias[1, 4, 1].item() == -2.0 * 2 ** -4 * 3 and bias[0, 2, 2].item() == 0.0


def check_model():
    """Every fixture's model is causal; relative encodings (`Encoding.relative`) give the same logits when
    every position is shifted by 4, absolute ones do not."""
    torch.manual_seed(2)
    tokens = torch.randint(0, CFG["vocab"], (2, CFG["seq_len"]))
    pos = torch.arange(CFG["seq_len"]).repeat(2, 1)
    for fixture, (enc, given) in FIXTURES.items():
        model = ref.Model(CFG, enc, given)
        ref.init_fixture_weights(model)
        with torch.no_grad():
            base = model(tokens, pos)
            changed = tokens.clone()
            changed[:, 7:] = (changed[:, 7:] + 1) % CFG["vocab"]
            assert torch.equal(model(changed, pos)[:, :7], base[:, :7]), f"{fixture}: not causal"
            same = torch.allclose(model(tokens, pos + 4), base, atol=1e-4)
            assert same == ref.ENCODINGS[enc].relative, f"{fixture}: shift invariance {same}"


def main():
    if not torch.__version__.startswith("1.13"):
        print(f"warning: fixtures were made with torch 1.13, this is {torch.__version__}", file=sys.stderr)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    missing = sorted(set(ref.ENCODINGS) - {enc for enc, _ in FIXTURES.values()})
    assert not missing, f"registered encodings without a fixture in FIXTURES: {missing}"
    check_encodings()
    check_model()
    os.makedirs(OUT_DIR, exist_ok=True)
    for fixture in FIXTURES:
        tensors, meta = build_fixture(fixture)
        path = os.path.join(OUT_DIR, f"model_{fixture}.safetensors")
        ref.save_checked(path, tensors, meta)
        losses = " ".join(f"{v:.6f}" for v in tensors["train.losses"])
        norms = " ".join(f"{v:.6f}" for v in tensors["train.grad_norms"])
        print(f"{fixture:12s} {os.path.getsize(path) / 1024:6.1f} KB  loss {tensors['out.loss']:.6f}")
        print(f"             train.losses     {losses}")
        print(f"             train.grad_norms {norms}")
    tensors, meta, clipped = build_trainer_fixture()
    path = os.path.join(OUT_DIR, f"trainer_{TRAINER['encoding']}.safetensors")
    ref.save_checked(path, tensors, meta)
    print(f"trainer_{TRAINER['encoding']} {os.path.getsize(path) / 1024:6.1f} KB  {TRAINER['steps']} steps, "
          f"{clipped} clipped at {TRAINER['clip_norm']}")
    print("             losses     " + " ".join(f"{v:.4f}" for v in tensors["train.losses"]))
    print("             grad_norms " + " ".join(f"{v:.4f}" for v in tensors["train.grad_norms"]))


if __name__ == "__main__":
    main()
