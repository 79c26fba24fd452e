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
import torch.nn as nn
import torch.nn.functional as F

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
TRAIN = dict(steps=5, peak_lr=1e-2, min_lr=1e-3, warmup=2, betas=[0.9, 0.999], eps=1e-8,
             weight_decay=0.1, clip_norm=1.0)


# ---------------------------------------------------------------- safetensors (no pip package here)
def save_safetensors(path, tensors, metadata):
    """tensors: name -> np.ndarray (float32 -> F32, int32 -> I32). Atomic via .tmp + rename."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.array(tensors[name], order="C")  # (ascontiguousarray would turn 0-d into 1-d)
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.int32): "I32"}[a.dtype]
        b = a.astype({"F32": "<f4", "F64": "<f8", "I32": "<i4"}[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        chunks.append(b)
        offset += len(b)
    header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-(8 + len(h)) % 8)  # data section 8-byte aligned
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(chunks))
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data, out = raw[8 + n:], {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        dt = {"F32": "<f4", "F64": "<f8", "I32": "<i4"}[e["dtype"]]
        a = np.frombuffer(data[begin:end], dtype=dt).reshape(e["shape"])
        assert a.nbytes == end - begin, name
        out[name] = a
    return out, metadata


# ---------------------------------------------------------------- positional encodings
def sinusoidal_table(positions, d, base):
    """(B, T) int -> (B, T, d): PE[t, 2i] = sin(t / base^(2i/d)), PE[t, 2i+1] = cos(same)."""
    i = torch.arange(d // 2, dtype=torch.float64)
    inv = base ** (-2.0 * i / d)                              # (d/2,)
    ang = positions.to(torch.float64)[..., None] * inv        # (B, T, d/2)
    pe = torch.stack([torch.sin(ang), torch.cos(ang)], dim=-1).reshape(*positions.shape, d)
    return pe.to(torch.float32)                               # angles in float64, then rounded


def rope(x, positions, base, layout):
    """x (B, H, T, hs), positions (B, T). Rotates all hs dims (fraction 1.0), theta_i = base^(-2i/hs).
    interleaved pairs dims (2i, 2i+1); half (Llama) pairs dims (i, i + hs/2).
    (x1, x2) -> (x1 cos a - x2 sin a, x1 sin a + x2 cos a), a = position * theta_i."""
    hs = x.shape[-1]
    i = torch.arange(hs // 2, dtype=torch.float64)
    theta = base ** (-2.0 * i / hs)                                      # (hs/2,)
    ang = positions.to(torch.float64)[:, None, :, None] * theta          # (B, 1, T, hs/2)
    cos, sin = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    if layout == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).reshape(x.shape)
    assert layout == "half"
    x1, x2 = x[..., : hs // 2], x[..., hs // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


# ---------------------------------------------------------------- the model (pre-LN, GPT-2 style)
class Attention(nn.Module):
    def __init__(self, d, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, positions, enc, params):
        B, T, d = x.shape
        H, hs = self.n_heads, d // self.n_heads
        q, k, v = self.qkv(x).split(d, dim=-1)                           # each (B, T, d)
        q, k, v = (t.reshape(B, T, H, hs).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hs)
        if enc in ("rope", "rope_half"):
            q = rope(q, positions, params["base"], params["layout"])
            k = rope(k, positions, params["base"], params["layout"])
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)                  # (B, H, T, T)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, d)                   # merge heads
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc = nn.Linear(d, hidden)
        self.proj = nn.Linear(hidden, d)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))  # exact erf GELU


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.ln1 = nn.LayerNorm(d, eps=cfg["ln_eps"])
        self.attn = Attention(d, cfg["n_heads"])
        self.ln2 = nn.LayerNorm(d, eps=cfg["ln_eps"])
        self.mlp = MLP(d, cfg["d_mlp"])

    def forward(self, x, positions, enc, params):
        x = x + self.attn(self.ln1(x), positions, enc, params)
        return x + self.mlp(self.ln2(x))


class Model(nn.Module):
    def __init__(self, cfg, enc):
        super().__init__()
        self.enc, self.params = enc, ENCODINGS[enc]
        self.tok_emb = nn.Embedding(cfg["vocab"], cfg["d_model"])
        if enc == "learned":
            self.pos = nn.Embedding(cfg["max_len"], cfg["d_model"])
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg["n_layers"]))
        self.ln_f = nn.LayerNorm(cfg["d_model"], eps=cfg["ln_eps"])
        self.head = nn.Linear(cfg["d_model"], cfg["vocab"], bias=False)

    def forward(self, tokens, positions):
        x = self.tok_emb(tokens)                                          # (B, T, d)
        if self.enc == "learned":
            x = x + self.pos(positions)
        elif self.enc == "sinusoidal":
            x = x + sinusoidal_table(positions, x.shape[-1], self.params["base"])
        for blk in self.blocks:
            x = blk(x, positions, self.enc, self.params)
        return self.head(self.ln_f(x))                                    # (B, T, V)


def is_layernorm(name):
    return name.split(".")[-2] in ("ln1", "ln2", "ln_f")


def init_fixture_weights(model):
    """Deliberately large, non-trivial values (a fixture, not a training init). pos.weight is drawn
    last so every encoding shares the very same other weights."""
    named = sorted(model.named_parameters(), key=lambda kv: kv[0] == "pos.weight")
    with torch.no_grad():
        for name, p in named:
            if is_layernorm(name):
                p.copy_((1.0 if name.endswith(".weight") else 0.0) + 0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.normal_(0.0, 0.1)
            else:
                p.normal_(0.0, 0.2)


def masked_ce(logits, targets, mask):
    """Cross-entropy summed over counted tokens / number of counted tokens. Targets under a zero
    mask are -1 and never read (clamped to a valid id, then multiplied by 0)."""
    logp = logits.log_softmax(dim=-1)
    nll = -logp.gather(-1, targets.clamp(min=0)[..., None])[..., 0]      # (B, T)
    return (nll * mask).sum() / mask.sum()


def lr_at(s):
    t = TRAIN
    if s < t["warmup"]:
        return t["peak_lr"] * (s + 1) / t["warmup"]
    frac = (s - t["warmup"]) / max(1, t["steps"] - t["warmup"])
    return t["min_lr"] + 0.5 * (t["peak_lr"] - t["min_lr"]) * (1 + math.cos(math.pi * frac))


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
    model = Model(CFG, enc)
    init_fixture_weights(model)
    names = [n for n, _ in model.named_parameters()]
    params = {n: p.detach().clone() for n, p in model.named_parameters()}

    # The reference outputs come from the same model and float32 weights evaluated in float64: the
    # oracle is then the exact result, and pelab's float32 error is measured alone (a float32 PyTorch
    # result carries rounding errors of its own, as large as pelab's).
    model64 = copy.deepcopy(model).double()
    logits = model64(tokens, positions)
    loss = masked_ce(logits, targets, mask.double())
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model64.named_parameters()}
    del model64

    decay = [p for n, p in model.named_parameters() if n.endswith(".weight") and not is_layernorm(n)]
    no_decay = [p for n, p in model.named_parameters() if not (n.endswith(".weight") and not is_layernorm(n))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": TRAIN["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=TRAIN["peak_lr"], betas=tuple(TRAIN["betas"]), eps=TRAIN["eps"])
    losses, norms, lrs = [], [], []
    for s in range(TRAIN["steps"]):
        opt.zero_grad(set_to_none=True)
        step_loss = masked_ce(model(tokens, positions), targets, mask)
        losses.append(step_loss.item())
        step_loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), TRAIN["clip_norm"]).item())
        lr = lr_at(s)
        lrs.append(lr)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
    with torch.no_grad():
        losses.append(masked_ce(model(tokens, positions), targets, mask).item())

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
    a = rope(x[..., perm], pos, 10000.0, "interleaved")
    b = rope(x, pos, 10000.0, "half")[..., perm]
    assert torch.allclose(a, b, atol=1e-6), "rope layouts disagree"
    pe = sinusoidal_table(torch.tensor([[0, 3, 13]]), 6, 10000.0)[0]
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
        model = Model(CFG, enc)
        init_fixture_weights(model)
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
        save_safetensors(path, tensors, meta)
        back, back_meta = load_safetensors(path)  # self-check: bit-exact read back
        assert back_meta == meta and sorted(back) == sorted(tensors), path
        for n, a in tensors.items():
            assert back[n].dtype == a.dtype and back[n].shape == a.shape, n
            assert back[n].tobytes() == np.array(a, order="C").tobytes(), n
        losses = " ".join(f"{v:.6f}" for v in tensors["train.losses"])
        norms = " ".join(f"{v:.6f}" for v in tensors["train.grad_norms"])
        print(f"{enc:10s} {os.path.getsize(path) / 1024:6.1f} KB  loss {tensors['out.loss']:.6f}")
        print(f"           train.losses     {losses}")
        print(f"           train.grad_norms {norms}")


if __name__ == "__main__":
    main()
