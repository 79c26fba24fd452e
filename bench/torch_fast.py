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
rope's rotation has its own fast form (interleaved or half layout, any fraction), and so do xpos (the same
rotation with q's and k's scaled tables), shaw (q a^K^T then a gather; P scattered into buckets then one
product with a^V) and cope (gates from the attention logits computed once, as the authors' code).
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
                scale: float, rel_index: Optional[torch.Tensor], a_k: Optional[torch.Tensor],
                a_v: Optional[torch.Tensor], cope_e: Optional[torch.Tensor], cope_keep: Optional[torch.Tensor]):
        """x (B, T, d); mask additive, (T, T) or (B*H, T, T); cos, sin (T, 1 or 2, rot) or None (2: q's then
        k's table, xPos); Shaw: rel_index (B*H, T, T) int64 with tables a_k, a_v (R, hs) (a_v optional);
        CoPE: position embeddings cope_e (npos, hs) and cope_keep (T, T) 1 on the causal keys, else 0."""
        B, T, d = x.shape
        H = self.n_heads
        hs = d // H
        qkv = self.qkv(x).view(B, T, 3, H, hs)
        if cos is not None and sin is not None:
            # q and k rotated together: x cos + partner(x) sin, bit for bit pelab_ref's x1 cos - x2 sin, x1 sin + x2 cos.
            qk = qkv[:, :, :2, :, :rot]                                        # (B, T, 2, H, rot)
            c = cos.view(1, T, cos.shape[1], 1, rot)
            s = sin.view(1, T, sin.shape[1], 1, rot)
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
        if cope_e is not None and cope_keep is not None:
            # CoPE: the gate logits are the scaled attention logits (computed once, as the authors' code)
            qs = q * scale
            logits = torch.bmm(qs, k.transpose(1, 2))                          # (B*H, T, T)
            pos = (torch.sigmoid(logits) * cope_keep).flip(-1).cumsum(-1).flip(-1).clamp(max=cope_e.shape[0] - 1)
            z = torch.matmul(qs, cope_e.t())                                   # (B*H, T, npos)
            lo = pos.floor()
            w = pos - lo
            lo_i = lo.long()
            hi_i = pos.ceil().long()
            att = logits + mask + z.gather(-1, hi_i) * w + z.gather(-1, lo_i) * (1 - w)
        else:
            att = torch.baddbmm(mask, q, k.transpose(1, 2), beta=1.0, alpha=scale)  # (B*H, T, T)
        if rel_index is not None and a_k is not None:
            att = att + torch.matmul(q, a_k.t()).gather(-1, rel_index) * scale    # q_i . a^K[idx_ij]
        att = torch.softmax(att, dim=-1)
        y = torch.bmm(att, v)
        if rel_index is not None and a_v is not None:
            # sum_j P_ij a^V[idx_ij]: P scattered into its buckets, then one product with a^V
            buckets = torch.zeros(B * H, T, a_v.shape[0], dtype=att.dtype).scatter_add_(-1, rel_index, att)
            y = y + torch.matmul(buckets, a_v)
        y = y.view(B, H, T, hs).transpose(1, 2).reshape(B, T, d)
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
                scale: float, rel_index: Optional[torch.Tensor], a_k: Optional[torch.Tensor],
                a_v: Optional[torch.Tensor], cope_e: Optional[torch.Tensor], cope_keep: Optional[torch.Tensor]):
        x = x + self.attn(self.ln1(x), mask, cos, sin, rot, half, scale, rel_index, a_k, a_v, cope_e, cope_keep)
        return x + self.mlp(self.ln2(x))


class FastModel(nn.Module):
    """pelab_ref.Model's parameters and function. script=True compiles each block with torch.jit.script."""

    def __init__(self, cfg, encoding, encoding_params=None, script=False):
        super().__init__()
        self.causal = cfg.get("causal", True)  # False: an encoder (config (d)), no mask
        dims = dict(d_model=cfg["d_model"], n_heads=cfg["n_heads"], head_dim=cfg["d_model"] // cfg["n_heads"],
                    n_layers=cfg["n_layers"], train_len=cfg["seq_len"], causal=self.causal)
        self.n_heads, self.hs = cfg["n_heads"], cfg["d_model"] // cfg["n_heads"]
        pos = ref.make_encoding(encoding, encoding_params or {}, dims)  # decides the token width (concat)
        self.tok_emb = nn.Embedding(cfg["vocab"], pos.token_width(cfg["d_model"]))
        self.pos = pos
        blocks = [FastBlock(cfg) for _ in range(cfg["n_layers"])]
        self.blocks = nn.ModuleList(torch.jit.script(b) if script else b for b in blocks)
        self.ln_f = nn.LayerNorm(cfg["d_model"], eps=cfg["ln_eps"])
        self.head = nn.Linear(cfg["d_model"], cfg["vocab"], bias=False)
        self.is_rope = isinstance(self.pos, ref.Rope)
        self.is_xpos = isinstance(self.pos, ref.XPos)
        self.is_shaw = isinstance(self.pos, ref.Shaw)
        self.is_cope = isinstance(self.pos, ref.CoPE)
        # a bias from learned parameters (T5, Kerple, FIRE), rebuilt every forward
        self.learned_bias = (any(True for _ in self.pos.parameters()) and not self.is_shaw and not self.is_cope)
        self._cache = {}  # positions' shape -> (positions, per-layer position-only inputs): one per length

    def _layer_inputs(self, positions, B, T, dtype):
        """Per layer: the additive mask (causal -inf above the diagonal, plus the encoding's bias), rotation
        tables (rope, xpos), Shaw's bucket index expanded to (B*H, T, T), CoPE's causal 0/1 matrix and the
        logit scale: what depends on the positions only is computed once and reused while they repeat; a
        learned bias (T5, Kerple, FIRE) is rebuilt every forward. The tables of Shaw and CoPE are the
        encoding's parameters themselves."""
        key = self._cache.get(tuple(positions.shape))
        if key is None or not torch.equal(key[0], positions):
            key = self._cache[tuple(positions.shape)] = (
                positions.clone(), [self._fixed_inputs(positions, layer, B, T, dtype) for layer in range(len(self.blocks))])
        out = []
        for layer, (causal, cos, sin, rot, half, scale, rel_index, cope_keep) in enumerate(key[1]):
            mask = causal
            if self.learned_bias:
                mask = self._with_bias(causal, positions, layer, B, dtype)
            a_k = a_v = cope_e = None
            if self.is_shaw:
                t = self.pos.tables[layer]
                a_k, a_v = t["key"], (t["value"] if self.pos.p["values"] else None)
            if self.is_cope:
                cope_e = self.pos.tables[0 if self.pos.p["shared_layers"] else layer].weight
            out.append((mask, cos, sin, rot, half, scale, rel_index, a_k, a_v, cope_e, cope_keep))
        return out

    def _with_bias(self, causal, positions, layer, B, dtype):
        """causal + the encoding's bias (B or 1, H or 1, T, T) -> (B*H, T, T), or causal alone without one."""
        H, T = self.n_heads, causal.shape[0]
        bias = self.pos.attention_bias(None, None, ref.Ctx(positions, layer, ref.shared_rows(positions)))
        if bias is None:
            return causal
        return (causal + bias.to(dtype)).expand(B, H, T, T).reshape(B * H, T, T).contiguous()

    def _fixed_inputs(self, positions, layer, B, T, dtype):
        H, hs = self.n_heads, self.hs
        causal = torch.full((T, T), float("-inf"), dtype=dtype).triu(1) if self.causal else torch.zeros(T, T, dtype=dtype)
        mask = causal if self.learned_bias or self.is_cope else self._with_bias(causal, positions, layer, B, dtype)
        cos = sin = rel_index = cope_keep = None
        rot, half = 0, False
        if self.is_rope or self.is_xpos:
            assert bool((positions == positions[:1]).all()), "fast path: rotations with per-row positions"
            rot = self.pos.rot if self.is_rope else hs
            half = self.is_rope and self.pos.p["layout"] == "half"
            cos, sin = self._rotation_tables(positions[:1], dtype)                  # (T, 1 or 2, rot)
        if self.is_shaw:
            index, _, _ = self.pos.relative_kv(ref.Ctx(positions, layer, ref.shared_rows(positions)))  # (rows, T, T)
            rel_index = index[:, None].expand(B, H, T, T).reshape(B * H, T, T).contiguous()
        if self.is_cope:
            cope_keep = torch.ones(T, T, dtype=dtype).tril()
        return (mask, cos, sin, rot, half, 1.0 / math.sqrt(hs), rel_index, cope_keep)

    def _rotation_tables(self, positions, dtype):
        """(T, 1, rot) cos and sin for RoPE; for xPos (T, 2, hs): q's tables (times zeta^(s/B)) then k's
        (times its inverse), each entry duplicated over its pair as torchscale does."""
        if self.is_rope:
            c, s_ = self.pos._tables(positions, dtype)                               # (1, 1, T, rot/2)
            c, s_ = c[0, 0], s_[0, 0]
            if self.pos.p["layout"] == "half":
                cos, sin = torch.cat([c, c], dim=-1), torch.cat([s_, s_], dim=-1)
            else:
                cos, sin = c.repeat_interleave(2, dim=-1), s_.repeat_interleave(2, dim=-1)
            return cos[:, None].contiguous(), sin[:, None].contiguous()
        p, hs = self.pos.p, self.hs
        i = torch.arange(0, hs, 2, dtype=torch.float64)
        zeta = (i + p["gamma"] * hs) / ((1 + p["gamma"]) * hs)
        up = zeta ** (ref.xpos_scale_positions(positions)[0].to(torch.float64)[:, None] / p["scale_base"])  # (T, hs/2)
        ang = positions[0].to(torch.float64)[:, None] * p["base"] ** (-i / hs)
        tables = []
        for f in (torch.cos, torch.sin):
            both = torch.stack([f(ang) * up, f(ang) / up], dim=1)                      # (T, 2, hs/2)
            tables.append(both.repeat_interleave(2, dim=-1).to(dtype).contiguous())
        return tables[0], tables[1]

    def forward(self, tokens, positions, digit_index: Optional[torch.Tensor] = None):
        """digit_index (B, T): the task's digit indices (pelab's Batch::digit_index) for Abacus, whose
        reference derives them from the tokens in a Python loop; without it, as the reference."""
        B, T = tokens.shape
        self.pos.begin_forward(positions)
        if isinstance(self.pos, ref.Abacus) and digit_index is not None:
            x = self.tok_emb(tokens) + F.embedding(digit_index, self.pos.weight)  # no training offset (k = 0)
        else:
            self.pos.tokens = tokens  # what an input encoding derives its own ids from, as pelab_ref.Model
            x = self.pos.encode_input(self.tok_emb(tokens), positions)        # (B, T, d)
        inputs = self._layer_inputs(positions, B, T, x.dtype)
        for blk, args in zip(self.blocks, inputs):
            x = blk(x, *args)
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
                            encoding_params=None, trace=False, digit_index=None):
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
    logits = fwd(tokens, positions) if digit_index is None else fwd(tokens, positions, digit_index)
    loss_fast = loss_fn(logits, ce_targets(targets, mask))
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
