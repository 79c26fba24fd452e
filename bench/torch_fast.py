"""Fast path of tests/pytorch/pelab_ref.py's model for the benchmark: the same parameters (same names and
shapes, so a pelab_ref state_dict loads as is) and the same function, written for speed on a CPU with
PyTorch 1.13, the way a strong PyTorch user would:

  - attention as two batched GEMMs over (B*H): scores = baddbmm(additive mask, q, k^T, alpha=1/sqrt(hs))
    (the causal mask, and an encoding's attention bias, folded into one additive tensor built once), softmax,
    then bmm with v; the fused qkv projection is split with one view/permute;
  - rotary embedding applied to q and k together, with cos/sin tables expanded to the head width once;
  - position tables and masks computed once per (positions, T) and reused every step;
  - cross-entropy with ignore_index (a 0/1 mask becomes target -1, precomputed) instead of log_softmax +
    gather + mask multiply;
  - AdamW with foreach=True (multi-tensor kernels), zero_grad(set_to_none=True);
  - optionally the transformer blocks compiled with torch.jit.script (see bench/README.md for which wins).

bench/bench_torch.py checks that this computes what pelab_ref.Model computes (loss and every gradient on
one batch) before it times it. Encodings: every encoding of pelab_ref works, through the Encoding hooks;
rope's rotation has its own fast form (interleaved or half layout, any fraction).
"""
import math
import warnings
from typing import List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

import pelab_ref as ref


def rotate_pairs(x, half: bool):
    """The partner of every element in a rotated pair, with the sign of the rotation: for the interleaved
    layout (x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...); for the half layout (a, b) -> (-b, a)."""
    if half:
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], dim=-1)
    return torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)


class FastAttention(nn.Module):
    def __init__(self, d: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, mask, cos: Optional[torch.Tensor], sin: Optional[torch.Tensor], rot: int, half: bool,
                scale: float):
        """x (B, T, d); mask additive, (T, T) or (B*H, T, T); cos, sin (T, rot) or None."""
        B, T, d = x.shape
        H = self.n_heads
        hs = d // H
        qkv = self.qkv(x).view(B, T, 3, H, hs)
        if cos is not None and sin is not None:
            # q and k rotated together: x cos + partner(x) sin, bit for bit pelab_ref's x1 cos - x2 sin, x1 sin + x2 cos.
            qk = qkv[:, :, :2, :, :rot]                                        # (B, T, 2, H, rot)
            c = cos.view(1, T, 1, 1, rot)
            s = sin.view(1, T, 1, 1, rot)
            qk = qk * c + rotate_pairs(qk, half) * s
            if rot < hs:
                qk = torch.cat([qk, qkv[:, :, :2, :, rot:]], dim=-1)
            q, k = qk[:, :, 0], qk[:, :, 1]                                    # (B, T, H, hs)
        else:
            q, k = qkv[:, :, 0], qkv[:, :, 1]
        v = qkv[:, :, 2]
        q = q.transpose(1, 2).reshape(B * H, T, hs)
        k = k.transpose(1, 2).reshape(B * H, T, hs)
        v = v.transpose(1, 2).reshape(B * H, T, hs)
        att = torch.baddbmm(mask, q, k.transpose(1, 2), beta=1.0, alpha=scale)  # (B*H, T, T)
        att = torch.softmax(att, dim=-1)
        y = torch.bmm(att, v).view(B, H, T, hs).transpose(1, 2).reshape(B, T, d)
        return self.proj(y)


class FastMLP(nn.Module):
    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.fc = nn.Linear(d, hidden)
        self.proj = nn.Linear(hidden, d)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class FastBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.ln1 = nn.LayerNorm(d, eps=cfg["ln_eps"])
        self.attn = FastAttention(d, cfg["n_heads"])
        self.ln2 = nn.LayerNorm(d, eps=cfg["ln_eps"])
        self.mlp = FastMLP(d, cfg["d_mlp"])

    def forward(self, x, mask, cos: Optional[torch.Tensor], sin: Optional[torch.Tensor], rot: int, half: bool,
                scale: float):
        x = x + self.attn(self.ln1(x), mask, cos, sin, rot, half, scale)
        return x + self.mlp(self.ln2(x))


class FastModel(nn.Module):
    """pelab_ref.Model's parameters and function. script=True compiles each block with torch.jit.script."""

    def __init__(self, cfg, encoding, encoding_params=None, script=False):
        super().__init__()
        dims = dict(d_model=cfg["d_model"], n_heads=cfg["n_heads"], head_dim=cfg["d_model"] // cfg["n_heads"],
                    n_layers=cfg["n_layers"], train_len=cfg["seq_len"], causal=True)
        self.n_heads, self.hs = cfg["n_heads"], cfg["d_model"] // cfg["n_heads"]
        pos = ref.make_encoding(encoding, encoding_params or {}, dims)  # decides the token width (concat)
        self.tok_emb = nn.Embedding(cfg["vocab"], pos.token_width(cfg["d_model"]))
        self.pos = pos
        blocks = [FastBlock(cfg) for _ in range(cfg["n_layers"])]
        self.blocks = nn.ModuleList(torch.jit.script(b) if script else b for b in blocks)
        self.ln_f = nn.LayerNorm(cfg["d_model"], eps=cfg["ln_eps"])
        self.head = nn.Linear(cfg["d_model"], cfg["vocab"], bias=False)
        self.is_rope = isinstance(self.pos, ref.Rope)
        self._key = None  # (positions, per-layer (mask, cos, sin, scale)) for the positions last seen

    def _layer_inputs(self, positions, B, T, dtype):
        """Per layer: the additive mask (causal -inf above the diagonal, plus the encoding's bias), rope
        tables and the logit scale; computed once and reused while the positions repeat, unless the
        encoding has parameters (a learned bias: T5, Kerple, FIRE), whose bias is rebuilt every forward."""
        learned = any(True for _ in self.pos.parameters())
        if (not learned and self._key is not None and self._key[0].shape == positions.shape
                and torch.equal(self._key[0], positions)):
            return self._key[1]
        shared = ref.shared_rows(positions)
        H, hs = self.n_heads, self.hs
        causal = torch.full((T, T), float("-inf"), dtype=dtype).triu(1)
        out = []
        for layer in range(len(self.blocks)):
            mask = causal
            ctx = ref.Ctx(positions, layer, shared)
            bias = self.pos.attention_bias(None, None, ctx)
            if bias is not None:  # (B or 1, H or 1, T, T) -> (B*H, T, T)
                mask = (causal + bias.to(dtype)).expand(B, H, T, T).reshape(B * H, T, T).contiguous()
            s = self.pos.logit_scale(ctx)
            assert s is None, "fast path: per-head logit scales are not implemented (use --variant ref)"
            cos = sin = None
            rot, half = 0, False
            if self.is_rope:
                assert bool((positions == positions[:1]).all()), "fast path: rope with per-row positions"
                rot, half = self.pos.rot, self.pos.p["layout"] == "half"
                c, s_ = self.pos._tables(positions[:1], dtype)                  # (1, 1, T, rot/2)
                c, s_ = c[0, 0], s_[0, 0]
                if half:
                    cos, sin = torch.cat([c, c], dim=-1), torch.cat([s_, s_], dim=-1)
                else:
                    cos, sin = c.repeat_interleave(2, dim=-1), s_.repeat_interleave(2, dim=-1)
                cos, sin = cos.contiguous(), sin.contiguous()                   # (T, rot)
            out.append((mask, cos, sin, rot, half, 1.0 / math.sqrt(hs)))
        self._key = (positions.clone(), out)
        return out

    def forward(self, tokens, positions):
        B, T = tokens.shape
        self.pos.begin_forward(positions)
        x = self.pos.encode_input(self.tok_emb(tokens), positions)            # (B, T, d)
        inputs = self._layer_inputs(positions, B, T, x.dtype)
        for blk, (mask, cos, sin, rot, half, scale) in zip(self.blocks, inputs):
            x = blk(x, mask, cos, sin, rot, half, scale)
        return self.head(self.ln_f(x))                                         # (B, T, V)


def trace_fixed(model, tokens, positions):
    """torch.jit.trace of the whole model for these (fixed) tokens and positions. The encodings' Python-side
    caches and checks become constants, which is right for a benchmark that feeds the same batch every step;
    the tracer's warnings about exactly that are silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        return torch.jit.trace(model, (tokens, positions), check_trace=False)


def ce_targets(targets, mask):
    """0/1 mask -> targets with -1 (ignored) where the mask is 0: F.cross_entropy's mean over the rest is
    pelab's masked mean."""
    assert bool(((mask == 0) | (mask == 1)).all()), "fast path: the mask must be 0/1"
    return torch.where(mask > 0, targets, torch.full_like(targets, -1))


def loss_fn(logits, ce_t):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ce_t.reshape(-1), ignore_index=-1)


def make_adamw(model, lr, weight_decay, foreach=True, **rule):
    """pelab_ref.make_adamw's groups and hyper-parameters, with torch 1.13's multi-tensor (foreach) AdamW."""
    named = list(model.named_parameters())
    return torch.optim.AdamW([{"params": [p for n, p in named if ref.decays(n, **rule)], "weight_decay": weight_decay},
                              {"params": [p for n, p in named if not ref.decays(n, **rule)], "weight_decay": 0.0}],
                             lr=lr, foreach=foreach)


def check_matches_reference(cfg, encoding, tokens, positions, targets, mask, script=False, seed=0,
                            encoding_params=None, trace=False):
    """Builds pelab_ref.Model and FastModel (blocks scripted, or the whole model traced, if asked) with the
    same weights (pelab_ref's deliberately large fixture init, so that a wrong term shows), runs forward +
    loss + backward on one batch in float64, and returns (loss difference, worst gradient difference relative to that gradient's
    max magnitude, parameter names compared). Raises if a parameter is missing on either side."""
    torch.manual_seed(seed)
    m_ref = ref.Model(cfg, encoding, encoding_params).double()
    ref.init_fixture_weights(m_ref)
    m_fast = FastModel(cfg, encoding, encoding_params, script=script).double()
    missing = m_fast.load_state_dict(m_ref.state_dict(), strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    loss_ref = ref.masked_ce(m_ref(tokens, positions), targets, mask.double())
    loss_ref.backward()
    fwd = trace_fixed(m_fast, tokens, positions) if trace else m_fast
    loss_fast = loss_fn(fwd(tokens, positions), ce_targets(targets, mask))
    loss_fast.backward()
    g_ref = dict(m_ref.named_parameters())
    # A gradient that is zero in exact arithmetic (FIRE's output bias: a per-head constant shifts no
    # softmax) is rounding noise on both sides: measure it against the largest gradient of the model.
    floor = 1e-6 * max(float(p.grad.abs().max()) for p in g_ref.values())
    worst, names = 0.0, []
    for n, p in m_fast.named_parameters():
        gr, gf = g_ref[n].grad, p.grad
        assert gr is not None and gf is not None and gr.shape == gf.shape, n
        scale = max(float(gr.abs().max()), floor)
        worst = max(worst, float((gr - gf).abs().max()) / scale)
        names.append(n)
    assert sorted(names) == sorted(g_ref), (sorted(names), sorted(g_ref))
    return abs(float(loss_ref) - float(loss_fast)), worst, names
