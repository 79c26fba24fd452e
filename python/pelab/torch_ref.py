"""pelab's decoder-only model, written in PyTorch: the one reference that the parity fixtures
(tests/pytorch/gen_fixtures.py) and the speed comparison (bench/bench_torch.py) both use.

What is here, each mirroring the pelab code named beside it:
  - safetensors read/write (core/safetensors.cpp; no pip package on this machine);
  - the positional encodings, one class each, in a registry (layers/positional/*.cpp);
  - the model: pre-LN GPT-2 block, fused qkv, exact-erf GELU MLP, untied LM head (layers/transformer.cpp);
  - the masked cross-entropy (core/ops/cross_entropy.cpp);
  - the training step: AdamW with pelab's decay rule, the warmup + decay schedule, global-norm clipping
    (training/optimizer.cpp, training/schedule.cpp, training/trainer.cpp);
  - two initializations: pelab's (N(0, 0.02)) and the fixtures' deliberately large one.

Adding an encoding: subclass Encoding, set `name` and `params` (the same keys and defaults as its
EncodingSpec in pelab), override the hooks it uses (the same four places as layers/positional/encoding.hpp),
decorate it with @register, and give it a fixture in gen_fixtures.py's FIXTURES (the C++ test
tests/layers/test_parity.cpp fails naming any registered pelab encoding without one).

Run with Debian's torch 1.13 (/usr/bin/python3), never a pyenv/venv python.
"""
import json
import math
import os
import re
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------- safetensors
_DTYPES = {"F32": "<f4", "F64": "<f8", "I32": "<i4"}


def save_safetensors(path, tensors, metadata):
    """tensors: name -> np.ndarray (float32 -> F32, float64 -> F64, int32 -> I32); metadata: str -> str.
    Atomic (.tmp + fsync + rename); names sorted, so the same input gives the same bytes."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.array(tensors[name], order="C")  # (ascontiguousarray would turn 0-d into 1-d)
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.int32): "I32"}[a.dtype]
        b = a.astype(_DTYPES[dtype]).tobytes()
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
    """-> (name -> read-only np.ndarray, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data, out = raw[8 + n:], {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        a = np.frombuffer(data[begin:end], dtype=_DTYPES[e["dtype"]]).reshape(e["shape"])
        assert a.nbytes == end - begin, name
        out[name] = a
    return out, metadata


def save_checked(path, tensors, metadata):
    """save_safetensors, then read the file back and require every tensor bit for bit."""
    save_safetensors(path, tensors, metadata)
    back, back_meta = load_safetensors(path)
    assert back_meta == metadata and sorted(back) == sorted(tensors), path
    for n, a in tensors.items():
        assert back[n].dtype == a.dtype and back[n].shape == a.shape, n
        assert back[n].tobytes() == np.array(a, order="C").tobytes(), n


# ---------------------------------------------------------------- positional encodings
ENCODINGS = {}  # name -> Encoding subclass


def register(cls):
    assert cls.name and cls.name not in ENCODINGS, cls.name
    ENCODINGS[cls.name] = cls
    return cls


def resolve_params(name, given):
    """The encoding's parameters with defaults filled in; unknown keys are an error (as in pelab)."""
    if name not in ENCODINGS:
        raise KeyError(f"unknown encoding '{name}'; registered: {', '.join(sorted(ENCODINGS))}")
    spec = ENCODINGS[name].params
    unknown = sorted(set(given) - set(spec))
    if unknown:
        raise KeyError(f"encoding '{name}' has no parameter(s) {unknown}; allowed: {sorted(spec)}")
    return {k: given.get(k, v) for k, v in spec.items()}


class Ctx:
    """What an encoding sees inside one attention layer (pelab's AttentionContext): input is the attention's
    input x (B, T, C) after the block's LayerNorm (content-dependent encodings project it)."""

    def __init__(self, positions, layer, shared, input=None):
        self.positions, self.layer, self.shared, self.input = positions, layer, shared, input


class Encoding(nn.Module):
    """The hooks of layers/positional/encoding.hpp, each defaulting to nothing. dims: d_model, n_heads,
    head_dim, n_layers, train_len, causal. Tensors: x (B, T, C), q and k (B, H, T, hs), positions (B, T)."""
    name = ""
    params = {}               # parameter -> default: the same keys and defaults as pelab's EncodingSpec
    relative = False          # logits unchanged when every position is shifted by the same offset

    def __init__(self, params, dims):
        super().__init__()
        self.p, self.dims = params, dims
        self._cache = {}

    def cached(self, slot, positions, key, fn):
        """fn() for these positions (and key), kept while the same positions come back (every layer of a
        forward, every step of a benchmark)."""
        hit = self._cache.get(slot)
        if hit is None or hit[1] != key or hit[0].shape != positions.shape or not torch.equal(hit[0], positions):
            hit = self._cache[slot] = (positions.clone(), key, fn())
        return hit[2]

    def begin_forward(self, positions):  # once per forward, before the first layer
        pass

    def encode_input(self, x, positions):  # token embeddings -> (B, T, C)
        return x

    def token_width(self, d_model):  # the token embedding width it wants (concat: narrower)
        return d_model

    def encode_qk(self, q, k, ctx):  # -> (q, k)
        return q, k

    def attention_bias(self, q, k, ctx):  # additive logit bias (B or 1, H or 1, T, T), or None
        return None

    def relative_kv(self, ctx):
        """Relative keys/values inside attention (Shaw): (index (rows, T, T) int64 in [0, R), a^K (R, hs),
        a^V (R, hs) or None), or None."""
        return None

    normalizer = "softmax"    # how logits become weights: softmax | stick_breaking

    def fixture_init(self, name, p):
        """The fixtures' value of parameter `name` (a pos.* name), or False for the generic init: for
        parameters whose meaning needs a range (Kerple's positive r1, r2)."""
        return False


def shared_rows(positions):
    """True when every row of positions (B, T) holds the same ids (pelab's rows_share_positions)."""
    return bool((positions == positions[:1]).all())


def pair_difference(positions, shared):
    """(rows, T, T) int64: p_i - p_j of each row; rows = 1 when the rows share their ids."""
    p = positions[:1] if shared else positions
    return p[:, :, None] - p[:, None, :]


@register
class NoPE(Encoding):
    name = "none"
    relative = True


@register
class Learned(Encoding):
    """A trainable (max_len, d) table; row t is added at position t (pelab's checkpoint name pos.weight)."""
    name = "learned"
    params = {"max_len": 0, "clamp": False}

    def __init__(self, params, dims):
        super().__init__(params, dims)
        self.max_len = params["max_len"] or dims["train_len"]
        self.weight = nn.Parameter(torch.empty(self.max_len, dims["d_model"]))
        nn.init.normal_(self.weight)  # what nn.Embedding does (the fixtures' random stream depends on it)

    def encode_input(self, x, positions):
        if self.p["clamp"]:
            positions = positions.clamp(max=self.max_len - 1)
        return x + F.embedding(positions, self.weight)


def sinusoidal_table(positions, d, base):
    """(...) int -> (..., d) float32: PE[t, 2i] = sin(t / base^(2i/d)), PE[t, 2i+1] = cos(same)."""
    i = torch.arange(d // 2, dtype=torch.float64)
    inv = base ** (-2.0 * i / d)                              # (d/2,)
    ang = positions.to(torch.float64)[..., None] * inv        # (..., d/2)
    pe = torch.stack([torch.sin(ang), torch.cos(ang)], dim=-1).reshape(*positions.shape, d)
    return pe.to(torch.float32)                               # angles in float64, then rounded


@register
class Sinusoidal(Encoding):
    name = "sinusoidal"
    params = {"base": 10000.0}

    def __init__(self, params, dims):
        super().__init__(params, dims)
        self.rows = torch.zeros(0, dims["d_model"])  # rows 0..n-1 of the table, grown on demand

    def encode_input(self, x, positions):
        top = int(positions.max()) + 1
        if top > self.rows.shape[0]:
            self.rows = sinusoidal_table(torch.arange(max(top, 2 * self.rows.shape[0])), x.shape[-1],
                                         self.p["base"])
        return x + self.rows[positions]


def rope_angles(positions, rot, base):
    """positions (B, T) -> angles (B, 1, T, rot/2) in float64: position * base^(-2i/rot)."""
    i = torch.arange(rot // 2, dtype=torch.float64)
    theta = base ** (-2.0 * i / rot)                                     # (rot/2,)
    return positions.to(torch.float64)[:, None, :, None] * theta


def rotate(x, cos, sin, layout):
    """x (B, H, T, rot) rotated pairwise: (x1, x2) -> (x1 cos a - x2 sin a, x1 sin a + x2 cos a).
    interleaved pairs dims (2i, 2i+1) (RoFormer); half pairs (i, i + rot/2) (Llama)."""
    if layout == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).reshape(x.shape)
    assert layout == "half", layout
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def rope_scaled_theta(rot, p, train_len, n):
    """RoPE length extension, written from the papers: frequencies (rot/2,) float64 and the table magnitude.
    pi: theta / s (Chen et al. 2023). ntk: base * s^(rot/(rot-2)). dynamic_ntk: ntk with s_n = factor * n / L
    - (factor - 1) when n > L (Hugging Face's DynamicNTK). yarn (Peng et al. 2023): r = L / (2 pi / theta),
    g = clamp((r - alpha) / (beta - alpha), 0, 1), theta' = (1 - g) theta / s + g theta, q and k times
    0.1 ln s + 1."""
    s, L, base = p["factor"], p["original_len"] or train_len, p["base"]
    i = torch.arange(rot // 2, dtype=torch.float64)
    theta = base ** (-2.0 * i / rot)
    kind = p["scaling"]
    if kind == "pi":
        return theta / s, 1.0
    if kind in ("ntk", "dynamic_ntk"):
        if kind == "dynamic_ntk":
            s = s * n / L - (s - 1) if n > L else 1.0
        return (base * s ** (rot / (rot - 2))) ** (-2.0 * i / rot), 1.0
    assert kind == "yarn", kind
    r = L * theta / (2 * math.pi)
    g = ((r - p["yarn_alpha"]) / (p["yarn_beta"] - p["yarn_alpha"])).clamp(0, 1)
    return (1 - g) * theta / s + g * theta, (p["yarn_mscale"] * math.log(s) + 1 if s > 1 else 1.0)


@register
class Rope(Encoding):
    """The first rot = fraction * hs dims of every q and k head are rotated, the rest pass through."""
    name = "rope"
    params = {"base": 10000.0, "layout": "interleaved", "fraction": 1.0, "scaling": "none", "factor": 2.0,
              "original_len": 0, "yarn_alpha": 1.0, "yarn_beta": 32.0, "yarn_mscale": 0.1}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        r = params["fraction"] * dims["head_dim"]
        self.rot = int(round(r))
        assert abs(r - self.rot) < 1e-9 and self.rot % 2 == 0 and self.rot > 0, f"rope: {r} rotated dims"

    def encode_qk(self, q, k, ctx):
        positions = ctx.positions
        cos, sin = self.cached("tables", positions, q.dtype, lambda: self._tables(positions, q.dtype))
        return self._rotate_heads(q, cos, sin), self._rotate_heads(k, cos, sin)

    def _tables(self, positions, dtype):
        """Angles in float64; cos and sin rounded to the activations' dtype (pelab's tables are `real`)."""
        if self.p["scaling"] == "none":
            ang = rope_angles(positions, self.rot, self.p["base"])          # (B, 1, T, rot/2)
            return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)
        n = positions.max(dim=1).values + 1                                  # per row (pelab's row_length)
        rows = [rope_scaled_theta(self.rot, self.p, self.dims["train_len"], int(v)) for v in n]
        theta = torch.stack([t for t, _ in rows])[:, None, None, :]          # (B, 1, 1, rot/2)
        m = rows[0][1]
        ang = positions.to(torch.float64)[:, None, :, None] * theta
        return (torch.cos(ang) * m).to(dtype), (torch.sin(ang) * m).to(dtype)

    def _rotate_heads(self, x, cos, sin):
        if self.rot == x.shape[-1]:
            return rotate(x, cos, sin, self.p["layout"])
        return torch.cat([rotate(x[..., :self.rot], cos, sin, self.p["layout"]), x[..., self.rot:]], dim=-1)


def alibi_slopes(n_heads):
    """Press et al.: for H a power of two 2^(-8/H), 2^(-16/H), ...; otherwise the slopes of the next lower
    power of two followed by every other slope of the next higher one."""
    def pow2(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    p = 1
    while p * 2 <= n_heads:
        p *= 2
    return pow2(p) + pow2(2 * p)[0::2][:n_heads - p]


@register
class Alibi(Encoding):
    """bias[b, h, i, j] = -m_h |p_i - p_j|, computed in float64 and rounded to float32 as pelab's constant;
    (1, H, T, T) when the rows share their ids, else (B, H, T, T)."""
    name = "alibi"
    params = {"slope_scale": 1.0}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        self.slopes = torch.tensor(alibi_slopes(dims["n_heads"]), dtype=torch.float64) * params["slope_scale"]

    def attention_bias(self, q, k, ctx):
        return self.cached("bias", ctx.positions, None, lambda: self._bias(ctx.positions, ctx.shared))

    def _bias(self, positions, shared):
        d = pair_difference(positions, shared).to(torch.float64).abs()[:, None]     # (rows, 1, T, T)
        return (-self.slopes[None, :, None, None] * d).to(torch.float32)             # (rows, H, T, T)


def read_abc_bias(path):
    """The bias file of `pelab abc` (layers/positional/abc_bias.hpp, format 1) as [(masked, {d: v})] per
    head; asserts the layout (pelab's reader gives the messages)."""
    lines = []
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                lines.append(words)
    assert lines[0] == ["pelab-abc-bias", "1"] and lines[1][0] == "n_heads", path
    heads = []
    for w in lines[2:]:
        if w[0] == "head":
            assert w[2] == "masked" and int(w[1]) == len(heads), w
            heads.append((float(w[3]), {}))
        else:
            assert w[0] == "distance" and int(w[1]) not in heads[-1][1], w
            heads[-1][1][int(w[1])] = float(w[2])
    assert len(heads) == int(lines[1][1]), path
    return heads


@register
class Abc(Encoding):
    """Attention bias calibration's fixed biases (Duan et al. 2023): bias[b, h, i, j] = the file's value of
    head h at d = p_i - p_j, its `masked` value for a d it does not list, rounded to float32 as pelab's
    constant; (1, H, T, T) when the rows share their ids, else (B, H, T, T). No file: no bias."""
    name = "abc"
    params = {"bias_file": ""}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        self.heads = read_abc_bias(params["bias_file"]) if params["bias_file"] else []
        assert not self.heads or len(self.heads) == dims["n_heads"], "bias file heads != the model's"

    def attention_bias(self, q, k, ctx):
        if not self.heads:
            return None
        return self.cached("bias", ctx.positions, None, lambda: self._bias(ctx.positions, ctx.shared))

    def _bias(self, positions, shared):
        d = pair_difference(positions, shared)                                      # (rows, T, T)
        out = []
        for masked, kept in self.heads:
            b = torch.full(d.shape, masked, dtype=torch.float64)
            for dist, v in kept.items():
                b[d == dist] = v
            out.append(b)
        return torch.stack(out, dim=1).to(torch.float32)                           # (rows, H, T, T)


def t5_bucket(relative, bidirectional, num_buckets, max_distance):
    """Hugging Face transformers' T5Attention._relative_position_bucket (from Mesh TensorFlow), verbatim
    in substance: relative = key - query (int64 tensor) -> bucket ids."""
    ret = torch.zeros_like(relative)
    if bidirectional:
        num_buckets //= 2
        ret += (relative > 0).to(torch.long) * num_buckets
        n = torch.abs(relative)
    else:
        n = -torch.min(relative, torch.zeros_like(relative))
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return ret + torch.where(is_small, n, large)


@register
class T5(Encoding):
    """One learned scalar per (bucket, head) per table: pos.tables.<l>.weight (num_buckets, H), one table
    (shared_layers) or one per layer; bidirectional buckets when the model is not causal."""
    name = "t5"
    params = {"num_buckets": 32, "max_distance": 128, "shared_layers": True}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        n = 1 if params["shared_layers"] else dims["n_layers"]
        self.tables = nn.ModuleList(nn.Embedding(params["num_buckets"], dims["n_heads"]) for _ in range(n))

    def attention_bias(self, q, k, ctx):
        buckets = self.cached("buckets", ctx.positions, None, lambda: t5_bucket(
            -pair_difference(ctx.positions, ctx.shared), not self.dims["causal"], self.p["num_buckets"],
            self.p["max_distance"]))                                                 # (rows, T, T)
        table = self.tables[0 if self.p["shared_layers"] else ctx.layer]
        return table(buckets).permute(0, 3, 1, 2)                                   # (rows, H, T, T)


@register
class Kerple(Encoding):
    """bias = -r1 log(1 + r2 d) or -r1 d^r2, d = |p_i - p_j|, r1 and r2 per head (pos.tables.<l>.r1, .r2),
    projected into [0.01, inf) (power r2: [0.01, 2]) at every forward as the authors' code does."""
    name = "kerple"
    params = {"variant": "log", "shared_layers": False}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        n = 1 if params["shared_layers"] else dims["n_layers"]
        H = dims["n_heads"]
        self.tables = nn.ModuleList(nn.ParameterDict({"r1": nn.Parameter(torch.rand(H)),
                                                      "r2": nn.Parameter(torch.rand(H))}) for _ in range(n))

    def begin_forward(self, positions):
        power = self.p["variant"] == "power"
        for t in self.tables:  # as the authors: p.data = p.data.clamp(...)
            t["r1"].data = t["r1"].data.clamp(min=0.01)
            t["r2"].data = t["r2"].data.clamp(min=0.01, max=2.0 if power else None)

    def attention_bias(self, q, k, ctx):
        t = self.tables[0 if self.p["shared_layers"] else ctx.layer]
        dtype = t["r1"].dtype
        d = self.cached("distance", ctx.positions, dtype, lambda: pair_difference(
            ctx.positions, ctx.shared).abs().to(dtype)[:, None])                    # (rows, 1, T, T)
        r1, r2 = t["r1"][None, :, None, None], t["r2"][None, :, None, None]
        if self.p["variant"] == "power":
            return -r1 * d.pow(r2)
        return -r1 * torch.log(1 + r2 * d)

    def fixture_init(self, name, p):
        hi = 1.8 if (self.p["variant"] == "power" and name.endswith("r2")) else 1.5
        return 0.2 + (hi - 0.2) * torch.rand_like(p)


class FireMLP(nn.Module):
    def __init__(self, hidden, outputs, init_c):
        super().__init__()
        self.fc = nn.Linear(1, hidden)
        self.out = nn.Linear(hidden, outputs)
        self.c = nn.Parameter(torch.tensor([float(init_c)]))
        self.L_multiplier = nn.Parameter(torch.tensor([1.0]))


@register
class Fire(Encoding):
    """Li et al. 2023, as their reference module, on position ids: f(psi(p_i - p_j) / psi(max(L, p_i))),
    psi(x) = log(|c x| + 1), L = |L_multiplier * init_L|, normalizer + 1e-6."""
    name = "fire"
    params = {"hidden": 32, "init_c": 0.1, "init_L": 512.0, "per_head": True, "shared_layers": False}
    relative = False

    def __init__(self, params, dims):
        super().__init__(params, dims)
        n = 1 if params["shared_layers"] else dims["n_layers"]
        outputs = dims["n_heads"] if params["per_head"] else 1
        self.tables = nn.ModuleList(FireMLP(params["hidden"], outputs, params["init_c"]) for _ in range(n))

    def attention_bias(self, q, k, ctx):
        f = self.tables[0 if self.p["shared_layers"] else ctx.layer]
        rows = ctx.positions[:1] if ctx.shared else ctx.positions
        rel = pair_difference(ctx.positions, ctx.shared).to(f.c.dtype)               # (rows, T, T)
        query = rows.to(f.c.dtype)[:, :, None]                                      # (rows, T, 1)
        threshold = torch.abs(f.L_multiplier * self.p["init_L"])
        normalizer = torch.log(torch.abs(f.c * torch.max(query, threshold)) + 1) + 1e-6
        x = torch.log(torch.abs(f.c * rel) + 1) / normalizer
        bias = f.out(torch.relu(f.fc(x[..., None])))                                  # (rows, T, T, H or 1)
        return bias.permute(0, 3, 1, 2)

    def fixture_init(self, name, p):
        if name.endswith(".c"):
            return 0.05 + 0.45 * torch.rand_like(p)
        if name.endswith(".L_multiplier"):
            return 0.5 + torch.rand_like(p)
        return False


# ---- the history encodings (integer, normalized, binary, multiplicative, concat, recurrent)
def scalar_pattern(v, C, pattern):
    """v (B, T) float64 -> (B, T, C): +v on even and -v on odd components ("alternating"), or v on
    every component ("constant"), as layers/positional/position_vectors.hpp."""
    u = torch.ones(C, dtype=torch.float64)
    if pattern == "alternating":
        u[1::2] = -1.0
    else:
        assert pattern == "constant", pattern
    return v[..., None] * u


@register
class Integer(Encoding):
    """x + scale * p * u (integer.cpp); the vector is rounded to float32 as pelab's constant."""
    name = "integer"
    params = {"scale": 1.0, "pattern": "alternating"}

    def encode_input(self, x, positions):
        v = self.p["scale"] * positions.to(torch.float64)
        return x + scalar_pattern(v, x.shape[-1], self.p["pattern"]).to(torch.float32).to(x.dtype)


@register
class Normalized(Encoding):
    """x + (p - min_row) / (max_row - min_row) * u, 0 when the row's ids are all equal (normalized.cpp)."""
    name = "normalized"
    params = {"pattern": "alternating"}
    relative = True

    def encode_input(self, x, positions):
        p = positions.to(torch.float64)
        lo, hi = p.min(dim=1, keepdim=True).values, p.max(dim=1, keepdim=True).values
        span = hi - lo
        v = torch.where(span > 0, (p - lo) / torch.where(span > 0, span, torch.ones_like(span)), torch.zeros_like(p))
        return x + scalar_pattern(v, x.shape[-1], self.p["pattern"]).to(torch.float32).to(x.dtype)


@register
class Binary(Encoding):
    """Bit k of the id (least significant first) as -1/+1 in component k < bits, 0 elsewhere (binary.cpp);
    bits = 0: just enough for the training ids."""
    name = "binary"
    params = {"bits": 0}

    def __init__(self, params, dims):
        super().__init__(params, dims)
        self.bits = params["bits"] or max(1, math.ceil(math.log2(dims["train_len"])))

    def encode_input(self, x, positions):
        assert int(positions.max()) < 2 ** self.bits, "binary: id beyond 2^bits"
        k = torch.arange(self.bits)
        bit = (positions[..., None] >> k) & 1                                  # (B, T, bits)
        pe = torch.zeros(*positions.shape, x.shape[-1], dtype=x.dtype)
        pe[..., :self.bits] = (2 * bit - 1).to(x.dtype)
        return x + pe


@register
class Multiplicative(Encoding):
    """x * p: the sinusoidal table (fixed), or a learned table of gains pos.gain (max_len, d)."""
    name = "multiplicative"
    params = {"kind": "sinusoidal", "base": 10000.0, "max_len": 0}

    def __init__(self, params, dims):
        super().__init__(params, dims)
        if params["kind"] == "learned":
            self.gain = nn.Parameter(torch.ones(params["max_len"] or dims["train_len"], dims["d_model"]))

    def encode_input(self, x, positions):
        if self.p["kind"] == "learned":
            return x * F.embedding(positions, self.gain)
        return x * sinusoidal_table(positions, x.shape[-1], self.p["base"]).to(x.dtype)


@register
class Concat(Encoding):
    """[token embedding (d - d_pos) | position vector (d_pos)]: sinusoidal at width d_pos, or a learned
    table pos.weight (max_len, d_pos). The model asks token_width() for its token table's width."""
    name = "concat"
    params = {"kind": "sinusoidal", "d_pos": 0, "base": 10000.0, "max_len": 0}

    def __init__(self, params, dims):
        super().__init__(params, dims)
        self.d_pos = params["d_pos"] or max(2, dims["d_model"] // 8 * 2)
        assert self.d_pos < dims["d_model"], "concat: d_pos >= d_model"
        if params["kind"] == "learned":
            self.weight = nn.Parameter(torch.empty(params["max_len"] or dims["train_len"], self.d_pos))
            nn.init.normal_(self.weight)

    def token_width(self, d_model):
        return d_model - self.d_pos

    def encode_input(self, x, positions):
        if self.p["kind"] == "learned":
            pe = F.embedding(positions, self.weight)
        else:
            pe = sinusoidal_table(positions, self.d_pos, self.p["base"]).to(x.dtype)
        return torch.cat([x, pe], dim=-1)


@register
class Recurrent(Encoding):
    """torch.nn.GRU / nn.LSTM (one layer, batch_first, hidden d_model, zero initial state) over the token
    embeddings, replacing them (or added to them: residual). pelab's names: pos.rnn.weight_ih_l0, ..."""
    name = "recurrent"
    params = {"cell": "gru", "residual": False}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        d = dims["d_model"]
        self.rnn = (nn.LSTM if params["cell"] == "lstm" else nn.GRU)(d, d, batch_first=True)

    def encode_input(self, x, positions):
        h = self.rnn(x)[0]                                                   # (B, T, d)
        return x + h if self.p["residual"] else h
# ---- end of the history encodings


# ---- Shaw, xPos, CoPE
@register
class Shaw(Encoding):
    """Shaw et al. 2018: relative keys a^K and values a^V (2 clip + 1, hs) per layer, shared by the heads
    (pos.tables.<l>.key, .value), indexed by clip(p_j - p_i, -clip, clip) + clip; values optional."""
    name = "shaw"
    params = {"clip": 16, "values": True}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        R, hs = 2 * params["clip"] + 1, dims["head_dim"]
        def table():
            t = nn.ParameterDict({"key": nn.Parameter(torch.randn(R, hs))})
            if params["values"]:
                t["value"] = nn.Parameter(torch.randn(R, hs))
            return t
        self.tables = nn.ModuleList(table() for _ in range(dims["n_layers"]))

    def relative_kv(self, ctx):
        c = self.p["clip"]
        index = self.cached("index", ctx.positions, None, lambda: (
            -pair_difference(ctx.positions, ctx.shared)).clamp(-c, c) + c)            # (rows, T, T): p_j - p_i
        t = self.tables[ctx.layer]
        return index, t["key"], t["value"] if self.p["values"] else None


def xpos_scale_positions(positions):
    """torchscale's centred scale positions t - ceil(T/2) for t = 0..T-1, on ids: p - (p_0 + ceil(T/2))."""
    T = positions.shape[1]
    return positions - (positions[:, :1] + (T + 1) // 2)


@register
class XPos(Encoding):
    """Sun et al. 2022 as microsoft/torchscale's XPOS (component/xpos_relative_position.py): interleaved
    rotation by p * base^(-2i/hs) of the whole head, both cos and sin multiplied by zeta_i^(s/scale_base)
    for q and by its inverse for k (downscale), zeta_i = (2i/hs + gamma) / (1 + gamma), s centred."""
    name = "xpos"
    params = {"base": 10000.0, "scale_base": 512.0, "gamma": 0.4}
    relative = True

    def encode_qk(self, q, k, ctx):
        hs = q.shape[-1]
        pos = ctx.positions.to(torch.float64)
        i = torch.arange(0, hs, 2, dtype=torch.float64)                             # 2i
        zeta = (i + self.p["gamma"] * hs) / ((1 + self.p["gamma"]) * hs)            # torchscale's `scale` buffer
        scale = zeta ** (xpos_scale_positions(ctx.positions).to(torch.float64)[..., None] / self.p["scale_base"])
        ang = pos[..., None] * self.p["base"] ** (-i / hs)                           # (B, T, hs/2)
        sin, cos = torch.sin(ang), torch.cos(ang)

        def apply(x, m):  # torchscale's apply_rotary_pos_emb: x cos + rotate_every_two(x) sin, both times m
            dup = lambda t: (t * m).repeat_interleave(2, dim=-1)[:, None].to(x.dtype)  # (B, 1, T, hs)
            rot = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
            return x * dup(cos) + rot * dup(sin)
        return apply(q, scale), apply(k, 1 / scale)


@register
class CoPE(Encoding):
    """Golovneva et al. 2024 as facebookresearch/RAM's ContextPosSelfAttn (projects/cope/src/cope/
    context_position.py): gates sigmoid(q.k / sqrt(hs)) masked to the causal keys, positions = reversed
    cumsum clamped to npos - 1, logits q.e interpolated between floor and ceil, divided by sqrt(hs) with
    the attention logits. e (npos, hs) per layer (pos.tables.<l>.weight; theirs is (1, hs, npos)), zero
    at init as theirs."""
    name = "cope"
    params = {"npos": 0, "shared_layers": False}
    relative = True  # ignores the ids

    def __init__(self, params, dims):
        super().__init__(params, dims)
        assert dims["causal"], "cope: causal attention only"
        self.npos = params["npos"] or dims["train_len"] + 1
        n = 1 if params["shared_layers"] else dims["n_layers"]
        self.tables = nn.ModuleList(nn.Embedding(self.npos, dims["head_dim"]) for _ in range(n))
        for t in self.tables:
            nn.init.zeros_(t.weight)

    def attention_bias(self, q, k, ctx):
        hs, T = q.shape[-1], q.shape[-2]
        e = self.tables[0 if self.p["shared_layers"] else ctx.layer].weight         # (npos, hs)
        gates = torch.sigmoid((q @ k.transpose(-1, -2)) / math.sqrt(hs))
        gates = gates * torch.ones(T, T, dtype=q.dtype).tril()                      # future keys count 0
        positions = gates.flip(-1).cumsum(dim=-1).flip(-1).clamp(max=self.npos - 1)
        pos_logits_fixed = q @ e.t()                                                # (B, H, T, npos)
        ceil, floor = positions.ceil().long(), positions.floor().long()
        w = positions - floor
        pos_logits = pos_logits_fixed.gather(-1, ceil) * w + pos_logits_fixed.gather(-1, floor) * (1 - w)
        return pos_logits / math.sqrt(hs)
# ---- end of Shaw, xPos, CoPE


# ---- the 2024-2026 frontier: FoX, stick-breaking
@register
class Fox(Encoding):
    """Forgetting Transformer (Lin et al. 2025): per layer and head f_t = sigmoid(w_h . x_t + b_h) from the
    layer's input; logits + sum_{j < l <= i} log f_l."""
    name = "fox"
    params = {"bias_init": 0.0}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        self.gates = nn.ModuleList(nn.Linear(dims["d_model"], dims["n_heads"]) for _ in range(dims["n_layers"]))

    def attention_bias(self, q, k, ctx):
        log_f = F.logsigmoid(self.gates[ctx.layer](ctx.input))     # (B, T, H)
        c = log_f.cumsum(dim=1).transpose(1, 2)                    # (B, H, T)
        return c[..., :, None] - c[..., None, :]                   # (B, H, T, T)


@register
class GrapeM(Encoding):
    """GRAPE-M, commuting (Zhang et al. 2025, Sec. 3.1): q, k of a head at id p rotated by exp(p omega_i L_i)
    on the canonical planes, omega learned per layer (pos.freq.<l> (1 or H, hs/2)): exp(f / log_freq_scale),
    f = log_freq_scale * log omega (variant grape, the authors' lr-scaling trick) or signed omega (comrope). comrope is computed as ComRoPE does, exp(p A) by torch.matrix_exp of each
    2x2 block A = omega [[0, -1], [1, 0]], so its parity also checks that the closed form is that exponential."""
    name = "grape_m"
    params = {"variant": "grape", "base": 10000.0, "init_std": 1.0, "layout": "half", "per_head": False,
              "learn": True, "log_freq_scale": 16.0}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        hs = dims["head_dim"]
        self.rope_freq = params["base"] ** (-2.0 * torch.arange(hs // 2, dtype=torch.float64) / hs)
        hf = dims["n_heads"] if params["per_head"] and params["learn"] else 1
        self.freq = nn.ParameterList(nn.Parameter(torch.zeros(hf, hs // 2)) for _ in range(dims["n_layers"])) \
            if params["learn"] else None

    def omega(self, layer):  # (1 or H, hs/2)
        if self.freq is None:
            return self.rope_freq[None, :]
        f = self.freq[layer]
        return f if self.p["variant"] == "comrope" else torch.exp(f / self.p["log_freq_scale"])

    def encode_qk(self, q, k, ctx):
        w = self.omega(ctx.layer).to(torch.float64)  # angles in float64, as pelab's tables
        ang = ctx.positions.to(torch.float64)[:, None, :, None] * w[None, :, None, :]  # (B, 1 or H, T, hs/2)
        if self.p["variant"] == "comrope":
            return self._matrix_exp_rotate(q, ang), self._matrix_exp_rotate(k, ang)
        cos, sin = torch.cos(ang).to(q.dtype), torch.sin(ang).to(q.dtype)
        return rotate(q, cos, sin, self.p["layout"]), rotate(k, cos, sin, self.p["layout"])

    def _matrix_exp_rotate(self, x, ang):
        J = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=torch.float64)
        R = torch.matrix_exp(ang[..., None, None] * J).to(x.dtype)                    # (B, Hf, T, P, 2, 2)
        B, H, T, hs = x.shape
        if self.p["layout"] == "interleaved":
            pairs = x.reshape(B, H, T, hs // 2, 2)
            return (R @ pairs[..., None])[..., 0].reshape(B, H, T, hs)
        pairs = torch.stack([x[..., :hs // 2], x[..., hs // 2:]], dim=-1)            # (B, H, T, P, 2)
        y = (R @ pairs[..., None])[..., 0]
        return torch.cat([y[..., 0], y[..., 1]], dim=-1)

    def fixture_init(self, name, p):  # RoPE's spectrum (grape) or signed frequencies (comrope), perturbed
        if self.p["variant"] == "comrope":
            return 0.5 * torch.randn_like(p)
        return (self.rope_freq.log().to(p.dtype).expand_as(p) + 0.1 * torch.randn_like(p)) * self.p["log_freq_scale"]


@register
class GrapeA(Encoding):
    """GRAPE-A (Zhang et al. 2025, Sec. 4, eq. 4.6; the authors' llama-mha-grape-a-querykeygated.py):
    bias_ij = -S_ij g_ij, S_ij = omega_h (p_i - p_j) with omega_h = softplus(theta_h) slope_h (rate constant;
    theta in pos.omega.<l> (H), or omega = ALiBi's slopes when not learned) or -sum_{j < l <= i} log sigmoid(w_h
    . x_l + b_h) (rate gated; pos.gates.<l>); g_ij = softplus(v^_h . q_i / sqrt hs) + softplus(u^_h . k_j /
    sqrt hs) (lift query_key; v, u in pos.query_gate.<l>, pos.key_gate.<l> (H, hs), L2-normalized as
    F.normalize), one of the two (query, key) or 1 (constant)."""
    name = "grape_a"
    params = {"rate": "constant", "lift": "query_key", "learn": True, "slope_scale": 1.0, "bias_init": 0.0}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        H, L, hs = dims["n_heads"], dims["n_layers"], dims["head_dim"]
        self.slopes = torch.tensor(alibi_slopes(H), dtype=torch.float64) * params["slope_scale"]
        if params["rate"] == "gated":
            self.gates = nn.ModuleList(nn.Linear(dims["d_model"], H) for _ in range(L))
        elif params["learn"]:
            theta0 = math.log(math.expm1(1.0))                                   # softplus(theta0) = 1
            self.omega = nn.ParameterList(nn.Parameter(torch.full((H,), theta0)) for _ in range(L))
        if params["lift"] in ("query", "query_key"):
            self.query_gate = nn.ParameterList(nn.Parameter(torch.randn(H, hs) / math.sqrt(hs)) for _ in range(L))
        if params["lift"] in ("key", "query_key"):
            self.key_gate = nn.ParameterList(nn.Parameter(torch.randn(H, hs) / math.sqrt(hs)) for _ in range(L))

    @staticmethod
    def gate(x, v):  # softplus(v^_h . x / sqrt hs) (B, H, T, 1)
        vn = F.normalize(v, p=2, dim=-1, eps=1e-6).to(x.dtype)
        return F.softplus((x * vn[None, :, None, :]).sum(-1, keepdim=True) / math.sqrt(x.shape[-1]))

    def attention_bias(self, q, k, ctx):
        if self.p["rate"] == "gated":
            c = F.logsigmoid(self.gates[ctx.layer](ctx.input)).cumsum(dim=1).transpose(1, 2)   # (B, H, T)
            S = c[..., :, None] - c[..., None, :]                                              # -S (B, H, T, T)
        else:
            w = F.softplus(self.omega[ctx.layer]) * self.slopes.to(torch.float32) if self.p["learn"] else self.slopes
            d = pair_difference(ctx.positions, ctx.shared).to(q.dtype)[:, None]               # (rows, 1, T, T)
            S = -w.to(q.dtype)[None, :, None, None] * d
        g = 0
        if self.p["lift"] in ("query", "query_key"):
            g = g + self.gate(q, self.query_gate[ctx.layer])                                   # (B, H, T, 1)
        if self.p["lift"] in ("key", "query_key"):
            g = g + self.gate(k, self.key_gate[ctx.layer]).transpose(-1, -2)                   # (B, H, 1, T)
        return S if self.p["lift"] == "constant" else S * g


@register
class StickBreaking(Encoding):
    """Stick-breaking attention (Tan et al. 2025): no position vector; the normalizer is replaced."""
    name = "stick_breaking"
    params = {"attend_current": False}
    relative = True
    normalizer = "stick_breaking"


@register
class Selective(Encoding):
    """Selective attention (Leviathan et al. 2025, as x-transformers' selective_attn): S = ReLU(head 0's
    q k^T / sqrt(hs)) on past keys other than key 0; logits_ij -= sum_{k < i} S_kj in every head."""
    name = "selective"
    relative = True

    def attention_bias(self, q, k, ctx):
        T, hs = q.shape[-2], q.shape[-1]
        logits = q[:, :1] @ k[:, :1].transpose(-1, -2) / math.sqrt(hs)              # (B, 1, T, T)
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        S = F.relu(logits) * ((j < i) & (j > 0)).to(q.dtype)
        return -(S.cumsum(dim=2) - S)                                                # -(sum over earlier queries)


@register
class DynamicBias(Encoding):
    """x-transformers' DynamicPositionBias: an MLP (1 -> D -> SiLU, D -> D -> SiLU, ..., D -> H), D = d_model/4,
    of sign(d) log(|d| + 1), d = p_i - p_j, shared by the layers."""
    name = "dynamic_bias"
    params = {"depth": 2}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        D, depth = max(1, dims["d_model"] // 4), params["depth"]
        self.mlp = nn.ModuleList([nn.Linear(1 if l == 0 else D, D) for l in range(depth)] + [nn.Linear(D, dims["n_heads"])])

    def attention_bias(self, q, k, ctx):
        d = pair_difference(ctx.positions, ctx.shared).to(torch.float64)
        h = (d.sign() * d.abs().log1p()).to(self.mlp[0].weight.dtype)[..., None]   # (rows, T, T, 1)
        for lin in self.mlp[:-1]:
            h = F.silu(lin(h))
        return self.mlp[-1](h).permute(0, 3, 1, 2)                                  # (rows, H, T, T)


@register
class Dape(Encoding):
    """DAPE (Zheng et al. 2024): bias = B + f([S ; B]) per pair, S = q k^T / sqrt(hs), B a static bias (kerple or
    alibi, pelab_ref's own), f: Linear(2H, width) -> LeakyReLU(0.01) -> Linear(width, H), one per layer."""
    name = "dape"
    params = {"base": "kerple", "width": 32}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        H = dims["n_heads"]
        self.base = make_encoding(params["base"], {}, dims)
        self.mlps = nn.ModuleList(nn.ModuleDict({"fc": nn.Linear(2 * H, params["width"]),
                                                 "out": nn.Linear(params["width"], H)})
                                  for _ in range(dims["n_layers"]))

    def begin_forward(self, positions):
        self.base.begin_forward(positions)

    def attention_bias(self, q, k, ctx):
        B, H, T, hs = q.shape
        S = q @ k.transpose(-1, -2) / math.sqrt(hs)                                  # (B, H, T, T)
        bias = self.base.attention_bias(None, None, ctx).to(q.dtype).expand(B, H, T, T)
        x = torch.cat([S, bias], dim=1).permute(0, 2, 3, 1)                          # (B, T, T, 2H)
        m = self.mlps[ctx.layer]
        return bias + m["out"](F.leaky_relu(m["fc"](x), 0.01)).permute(0, 3, 1, 2)

    def fixture_init(self, name, p):
        if name.startswith("pos.base."):
            return self.base.fixture_init("pos." + name[len("pos.base."):], p)
        return False


class PathLayer(nn.Module):
    """PaTH's w and beta from the layer input, as flash-linear-attention's path_attn: low-rank C -> 32 -> C,
    a causal depthwise Conv1d of width 3 with SiLU, L2-normalized per head; beta = 2 sigmoid(Linear(C, H))."""

    def __init__(self, C, H):
        super().__init__()
        self.w_down = nn.Linear(C, 32, bias=False)
        self.w_up = nn.Linear(32, C, bias=False)
        self.conv = nn.Conv1d(C, C, 3, groups=C, padding=2, bias=False)
        self.beta = nn.Linear(C, H)


@register
class Path(Encoding):
    """PaTH attention (Yang et al. 2025): logit_ij = q_i . (H_i ... H_{j+1} k_j) / sqrt(hs), H_t = I - beta_t w_t w_t^T,
    computed as the authors' decoding recurrence, one token at a time; returned as the bias beyond q_i . k_j."""
    name = "path"
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        self.layers = nn.ModuleList(PathLayer(dims["d_model"], dims["n_heads"]) for _ in range(dims["n_layers"]))

    def attention_bias(self, q, k, ctx):
        B, H, T, hs = q.shape
        p, x = self.layers[ctx.layer], ctx.input
        u = p.w_up(p.w_down(x))                                                     # (B, T, C)
        w = F.silu(p.conv(u.transpose(1, 2))[..., :T]).transpose(1, 2)            # causal: the first T outputs
        w = w.reshape(B, T, H, hs).transpose(1, 2)                                  # (B, H, T, hs)
        w = w / (w.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt()
        beta = 2 * torch.sigmoid(p.beta(x)).transpose(1, 2)                         # (B, H, T)
        keys, logits = [], torch.zeros(B, H, T, T, dtype=q.dtype)
        for i in range(T):                                                          # token i arrives
            keys = [kj - beta[:, :, i, None] * (kj * w[:, :, i]).sum(-1, keepdim=True) * w[:, :, i] for kj in keys]
            keys.append(k[:, :, i])
            for j, kj in enumerate(keys):
                logits[:, :, i, j] = (q[:, :, i] * kj).sum(-1)
        plain = q @ k.transpose(-1, -2)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        return torch.where(causal, logits - plain, torch.zeros_like(plain)) / math.sqrt(hs)


@register
class Pope(Encoding):
    """PoPE (Gopalakrishnan et al. 2025): q -> [softplus(q) cos(p theta), softplus(q) sin(p theta)], theta_c =
    base^(-c/hs) for every component c; k the same with the phase p theta_c + delta[layer, h, c] when
    phase_bias is not "none" (delta clamped to [-2 pi, 0], as PoPE-pytorch); the attention scale stays
    1/sqrt(hs) (v's head size)."""
    name = "pope"
    params = {"base": 10000.0, "phase_bias": "none"}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        if params["phase_bias"] != "none":
            shape = (dims["n_layers"], dims["n_heads"], dims["head_dim"])
            init = torch.zeros(shape) if params["phase_bias"] == "zeros" else -2 * math.pi * torch.rand(shape)
            self.phase_bias = nn.Parameter(init)

    def encode_qk(self, q, k, ctx):
        hs = q.shape[-1]
        theta = self.p["base"] ** (-torch.arange(hs, dtype=torch.float64) / hs)
        angle = ctx.positions.to(torch.float64)[:, None, :, None] * theta              # (B, 1, T, hs)
        cos, sin = angle.cos().to(q.dtype), angle.sin().to(q.dtype)
        polar = lambda x, c, s: torch.cat([F.softplus(x) * c, F.softplus(x) * s], dim=-1)
        if self.p["phase_bias"] == "none":
            return polar(q, cos, sin), polar(k, cos, sin)
        delta = self.phase_bias[ctx.layer].clamp(-2 * math.pi, 0)[None, :, None, :]   # (1, H, 1, hs)
        # the keys' phase p theta + delta: cos(a + d), sin(a + d) written out, as pelab (angle sums)
        kc, ks = cos * delta.cos() - sin * delta.sin(), sin * delta.cos() + cos * delta.sin()
        return polar(q, cos, sin), polar(k, kc, ks)

    def fixture_init(self, name, p):
        # some deltas outside [-2 pi, 0]: the clamp's gradient 0 is checked too
        return -7.0 + 7.5 * torch.rand_like(p)


def turning_freqs(base, hs, length):
    """RoPE's base^(-2n/hs), n < hs/2, that turn at least once within `length` ids (>= 2 pi / length),
    float64, highest first: HoPE's kept pairs and FoPE's unclipped frequencies."""
    w = base ** (-2.0 * torch.arange(hs // 2, dtype=torch.float64) / hs)
    return w[w >= 2 * math.pi / length]


@register
class Hope(Encoding):
    """HoPE (Chen et al. 2025): RoPE on the m pairs with base^(-2i/hs) >= 2 pi / L (L = length, or the training
    length), the first 2m dims rotated (layout over those dims), the rest of each head unchanged."""
    name = "hope"
    params = {"base": 10000.0, "layout": "interleaved", "length": 0}
    relative = True

    def encode_qk(self, q, k, ctx):
        theta = turning_freqs(self.p["base"], q.shape[-1], self.p["length"] or self.dims["train_len"])
        r = 2 * len(theta)
        ang = ctx.positions.to(torch.float64)[:, None, :, None] * theta              # (B, 1, T, m)
        cos, sin = ang.cos().to(q.dtype), ang.sin().to(q.dtype)
        turn = lambda x: torch.cat([rotate(x[..., :r], cos, sin, self.p["layout"]), x[..., r:]], dim=-1)
        return turn(q), turn(k)


class PelabRng:
    """pelab's Rng (core/rng.cpp): xoshiro256** seeded through splitmix64, Box-Muller normals; the same
    stream bit for bit, for FoPE's fixed coefficients (drawn, not stored)."""
    M = (1 << 64) - 1

    def __init__(self, seed, stream):
        x, z = self._splitmix(seed)
        x = z ^ ((stream * 0xD6E8FEB86659FD93 + 0x632BE59BD9B4E019) & self.M)
        self.s = []
        for _ in range(4):
            x, w = self._splitmix(x)
            self.s.append(w)

    def _splitmix(self, x):
        x = (x + 0x9E3779B97F4A7C15) & self.M
        z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & self.M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.M
        return x, z ^ (z >> 31)

    def next_u64(self):
        rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & self.M
        s = self.s
        result = (rotl((s[1] * 5) & self.M, 7) * 9) & self.M
        t = (s[1] << 17) & self.M
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def uniform(self):
        return (self.next_u64() >> 11) * 2.0 ** -53

    def normal(self):
        u1 = self.uniform()
        while u1 <= 0.0:
            u1 = self.uniform()
        u2 = self.uniform()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@register
class Fope(Encoding):
    """FoPE as its authors' code (TsinghuaC3I/Fourier-Position-Embedding, olmo/model.py FourierEmbedding): the
    D' frequencies w_n >= 2 pi / L kept, per layer and head fixed coefficients sin_coef, cos_coef (H, D', d_out),
    d_out = min(D', hs/4), eye_xavier_norm with gain sigma; q -> q [c, c] + rotate_half(q) [s, s] with
    c = cos(p w) @ cos_coef, s = sin(p w) @ sin_coef padded with 1 to hs/2. The coefficients are buffers
    drawn from pelab's Rng(seed, layer): normals times the xavier std in float32, then the step identity."""
    name = "fope"
    params = {"base": 10000.0, "length": 0, "sigma": 0.3, "seed": 0}
    relative = False

    def __init__(self, params, dims):
        super().__init__(params, dims)
        H, hs = dims["n_heads"], dims["head_dim"]
        self.freq = turning_freqs(params["base"], hs, params["length"] or dims["train_len"])
        D = len(self.freq)
        self.d_out = min(D, hs // 4)
        std = params["sigma"] * math.sqrt(2.0 / (self.d_out * (D + H)))    # torch's xavier_normal_ on (H, D', d_out)
        step = -(-D // self.d_out)
        for layer in range(dims["n_layers"]):
            rng = PelabRng(params["seed"], layer)
            for which in ("sin", "cos"):                                  # reset_parameters: sin_coef first
                c = torch.tensor([rng.normal() * std for _ in range(H * D * self.d_out)],
                                 dtype=torch.float32).reshape(H, D, self.d_out)
                for m in range(self.d_out):
                    if m * step < D:
                        c[:, m * step, m] += 1.0
                self.register_buffer(f"{which}_coef_{layer}", c)

    def encode_qk(self, q, k, ctx):
        hs = q.shape[-1]
        ang = ctx.positions.to(torch.float64)[:, :, None] * self.freq                  # (B, T, D')
        cc, sc = getattr(self, f"cos_coef_{ctx.layer}"), getattr(self, f"sin_coef_{ctx.layer}")
        c = torch.einsum("btD,hDd->bhtd", ang.cos(), cc.to(torch.float64))              # (B, H, T, d_out)
        s = torch.einsum("btD,hDd->bhtd", ang.sin(), sc.to(torch.float64))
        c = F.pad(c, (0, hs // 2 - self.d_out), value=1.0).to(q.dtype)
        s = F.pad(s, (0, hs // 2 - self.d_out), value=1.0).to(q.dtype)
        c, s = torch.cat([c, c], dim=-1), torch.cat([s, s], dim=-1)

        def rotate_half(x):
            x1, x2 = x[..., :hs // 2], x[..., hs // 2:]
            return torch.cat([-x2, x1], dim=-1)
        return q * c + rotate_half(q) * s, k * c + rotate_half(k) * s


# ---- end of the frontier


def stick_breaking_weights(logits, visible, attend_current):
    """A_ij = sigmoid(z_ij) prod_{j < k < i'} (1 - sigmoid(z_ik)) over the keys a query sees (visible (T, T)
    bool, without the diagonal unless attend_current), written as the product it is (no log space)."""
    T = logits.shape[-1]
    keep = visible if attend_current else visible & ~torch.eye(T, dtype=torch.bool)
    beta = torch.sigmoid(logits) * keep
    one_minus = torch.where(keep, 1 - beta, torch.ones_like(beta))
    # prod over k > j of (1 - beta_k): a reversed cumulative product, shifted by one key
    after = torch.flip(torch.cumprod(torch.flip(one_minus, [-1]), dim=-1), [-1])
    after = torch.cat([after[..., 1:], torch.ones_like(after[..., :1])], dim=-1)
    return beta * after


def make_encoding(name, params, dims):
    """name: an encoding, or a variant "<encoding>.<variant>" of one (pelab's [encoding.rope.global]): the same
    encoding with parameters of its own."""
    base = name.split(".")[0]
    return ENCODINGS[base](resolve_params(base, params), dims)


# ---------------------------------------------------------------- QK-norm and Canon layers (layers/qk_norm.hpp, canon.hpp)
class HeadRMSNorm(nn.Module):
    """QK-norm of one of q, k: RMS over each head's hs dims, times a gain per dim shared by the heads."""

    def __init__(self, hs, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hs))

    def forward(self, x):  # (B, H, T, hs)
        return x / (x.pow(2).mean(-1, keepdim=True) + self.eps).sqrt() * self.weight


class Canon(nn.Module):
    """A Canon layer (Allen-Zhu, arXiv:2512.17351; PhysicsLM4 canon_helper.py's ShortConvolution without bias or
    activation): x + causal depthwise Conv1d(x) along time, or the convolution alone without the residual."""

    def __init__(self, channels, kernel=4, residual=True):
        super().__init__()
        # nn.Conv1d(channels, channels, kernel, groups=channels, bias=False)'s weight and default init
        self.weight = nn.Parameter(torch.empty(channels, 1, kernel))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        self.residual = residual

    def forward(self, x):  # (B, T, C)
        T = x.shape[1]
        y = F.conv1d(x.transpose(1, 2), self.weight, padding=self.weight.shape[-1] - 1,
                     groups=self.weight.shape[0])[..., :T].transpose(1, 2)
        return x + y if self.residual else y


def canon_settings(cfg):
    return {"points": "", "kernel": 4, "residual": True, **(cfg.get("canon") or {})}


# ---------------------------------------------------------------- the model (pre-LN, GPT-2 style)
class Attention(nn.Module):
    """scaling: cfg "attention" (pelab's [attention]): none | fixed (logits / temperature) | log_length (query
    row t's logits times max(1, log n / log L) / temperature, n = t + 1 keys when causal, else T; plain ratio
    without clamp) | learned (logits times exp(log_scale[h]), one parameter per layer and head)."""

    def __init__(self, d, n_heads, scaling=None, train_len=0, window=0, enc_heads=0, chunk=0, tuning=False,
                 qk_norm_eps=None, canon=None):
        super().__init__()
        self.n_heads = n_heads
        self.record = None  # a dict: q, k, v and weights recorded into it (record())
        self.window = window
        self.chunk = chunk    # chunked local attention: keys of the query's own chunk of `chunk` rows only
        self.tuning = tuning  # Llama 4's temperature tuning in this layer
        self.enc_heads = enc_heads if 0 < enc_heads < n_heads else 0  # [encoding] heads: the encoding's heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.scaling = {"scaling": "none", "temperature": 1.0, "log_length_clamp": True, "log_length_base": 0,
                        **(scaling or {})}
        self.scaling.pop("window", None)
        self.scaling.pop("qk_norm", None)
        self.scaling.pop("chunk", None)
        self.scaling.pop("temperature_tuning", None)
        self.tune = {"floor": self.scaling.pop("tuning_floor_scale", 8192.0),
                     "a": self.scaling.pop("tuning_attn_scale", 0.1),
                     "in_training": self.scaling.pop("tuning_in_training", False)}
        self.log_base = self.scaling["log_length_base"] or train_len
        if self.scaling["scaling"] == "learned":
            self.log_scale = nn.Parameter(torch.full((n_heads,), -math.log(self.scaling["temperature"])))
        if self.scaling["scaling"] == "ssmax":  # s log(L) = 1 / temperature at the training length
            s0 = 1.0 / (math.log(max(self.log_base, 2)) * self.scaling["temperature"])
            self.ssmax_s = nn.Parameter(torch.full((n_heads,), s0))
        self.canon_b = Canon(3 * d, canon["kernel"], canon["residual"]) if canon and "B" in canon["points"] else None
        if qk_norm_eps is not None:  # QK-norm in this layer
            self.q_norm, self.k_norm = HeadRMSNorm(d // n_heads, qk_norm_eps), HeadRMSNorm(d // n_heads, qk_norm_eps)
        else:
            self.q_norm = self.k_norm = None

    def visible_keys(self, T, causal):
        """(T,) float64: the keys each query row sees (within the window)."""
        n = torch.arange(1, T + 1, dtype=torch.float64) if causal else torch.full((T,), float(T), dtype=torch.float64)
        if causal and self.chunk:
            n = torch.arange(T, dtype=torch.float64) % self.chunk + 1   # keys [floor(t / C) C, t]
        return n.clamp(max=self.window) if self.window else n

    def tuning_scale(self, T, dtype):
        """(1, T, 1) Llama 4's temperature tuning of q (meta-llama/llama-models models/llama4/model.py):
        log(floor((t + 1) / floor_scale) + 1) * attn_scale + 1 at token index t; None where not applied."""
        if not self.tuning or (self.training and not self.tune["in_training"]):
            return None
        t = torch.arange(T, dtype=torch.float64)
        s = torch.log(torch.floor((t + 1.0) / self.tune["floor"]) + 1.0) * self.tune["a"] + 1.0
        return s.to(torch.float32).to(dtype)[None, :, None]                # pelab's multipliers are float

    def query_scale(self, T, causal, dtype):
        """(H or 1, T, 1) multipliers of each query row's logits, or None."""
        kind, temp = self.scaling["scaling"], self.scaling["temperature"]
        if kind == "learned":
            return self.log_scale.exp()[:, None, None]
        if kind == "ssmax":  # s_h log n; pelab's log n rows are float
            rows = self.visible_keys(T, causal).log().to(torch.float32).to(dtype)
            return self.ssmax_s[:, None, None] * rows[None, :, None]
        if kind == "fixed":
            return torch.full((1, T, 1), 1.0 / temp, dtype=dtype)
        if kind == "log_length":
            n = self.visible_keys(T, causal)
            f = n.log() / math.log(self.log_base)
            if self.scaling["log_length_clamp"]:
                f = f.clamp(min=1.0)
            return (f / temp).to(torch.float32).to(dtype)[None, :, None]  # pelab's multipliers are float
        return None

    def forward(self, x, ctx, pe, causal):
        B, T, d = x.shape
        H, hs = self.n_heads, d // self.n_heads
        qkv = self.qkv(x)                                                # (B, T, 3d)
        if self.canon_b is not None:                                     # Canon B on q, k, v together
            qkv = self.canon_b(qkv)
        q, k, v = qkv.split(d, dim=-1)                                   # each (B, T, d)
        q, k, v = (t.reshape(B, T, H, hs).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hs)
        if self.q_norm is not None:                                      # QK-norm, then the encoding
            q, k = self.q_norm(q), self.k_norm(k)
        q0, k0 = q, k
        q, k = pe.encode_qk(q, k, ctx)
        n = self.enc_heads
        if n:                                                            # the other heads as without the encoding
            q, k = torch.cat([q[:, :n], q0[:, n:]], dim=1), torch.cat([k[:, :n], k0[:, n:]], dim=1)
        logits = q @ k.transpose(-2, -1)                                  # (B, H, T, T)
        rel = pe.relative_kv(ctx)
        if rel is not None:
            logits = logits + relative_key_logits(q, rel[0], rel[1])
        att = logits / math.sqrt(hs)                                     # hs: v's head size (PoPE widens q, k)
        qs = self.query_scale(T, causal is not None, att.dtype)
        if qs is not None:
            att = att * qs                                               # not the additive bias below
        ts = self.tuning_scale(T, att.dtype)
        if ts is not None:
            att = att * ts                                               # q times the row's multiplier
        bias = pe.attention_bias(q, k, Ctx(ctx.positions, ctx.layer, ctx.shared, x))  # (B or 1, H or 1, T, T)
        if bias is not None and n:
            bias = bias * (torch.arange(H) < n).to(bias.dtype)[None, :, None, None]
        if bias is not None:
            att = att + bias
        hidden = causal                                                  # (T, T) True: a key the query does not see
        if self.window and causal is not None:
            hidden = causal | torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-self.window)
        if self.chunk and causal is not None:                            # Llama 4's create_chunked_attention_mask
            block = torch.arange(T) // self.chunk
            hidden = hidden | (block[:, None] != block[None, :])
        if pe.normalizer == "stick_breaking":
            att = stick_breaking_weights(att, ~hidden, pe.p["attend_current"])
        else:
            if hidden is not None:
                att = att.masked_fill(hidden, float("-inf"))
            att = att.softmax(dim=-1)
        if self.record is not None:
            self.record.update(q=q, k=k, v=v, weights=att)
        y = att @ v                                                      # (B, H, T, hs)
        if rel is not None and rel[2] is not None:
            y = y + relative_values(att, rel[0], rel[2])
        y = y.transpose(1, 2).reshape(B, T, d)                           # merge heads
        return self.proj(y)


def relative_key_logits(q, index, a_k):
    """Shaw's key term, materialised as the paper writes it: q_i . a^K_ij with a^K_ij = a_k[index_ij].
    q (B, H, T, hs), index (rows, T, T) -> (B, H, T, T)."""
    ak = a_k[index].expand(q.shape[0], -1, -1, -1)                       # (B, T, T, hs)
    return torch.einsum("bhid,bijd->bhij", q, ak)


def relative_values(att, index, a_v):
    """Shaw's value term: sum_j P_ij a^V_ij. att (B, H, T, T) -> (B, H, T, hs)."""
    av = a_v[index].expand(att.shape[0], -1, -1, -1)                     # (B, T, T, hs)
    return torch.einsum("bhij,bijd->bhid", att, av)


class MLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc = nn.Linear(d, hidden)
        self.proj = nn.Linear(hidden, d)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))  # exact erf GELU


def layer_pattern(pattern, n_layers, cast=str):
    """pelab's repeating per-layer patterns ([encoding] layers, [attention] window): "a,b" -> a, b, a, b, ..."""
    items = [cast(x.strip()) for x in pattern.split(",")]
    assert n_layers % len(items) == 0, (pattern, n_layers)
    return [items[i % len(items)] for i in range(n_layers)]


class Block(nn.Module):
    """cfg "canon" (pelab's [canon]): Canon A on ln1's output, B in the attention, C on ln2's output, D on the
    MLP's hidden pre-activation. chunk, tuning: this layer's [attention] chunk and temperature tuning; qk_norm:
    this layer normalizes q and k ([attention] qk_norm)."""

    def __init__(self, cfg, window=0, chunk=0, tuning=False, qk_norm=False):
        super().__init__()
        d, canon = cfg["d_model"], canon_settings(cfg)
        self.ln1 = nn.LayerNorm(d, eps=cfg["ln_eps"])
        self.attn = Attention(d, cfg["n_heads"], cfg.get("attention"), cfg["seq_len"], window, cfg.get("heads", 0),
                              chunk, tuning, cfg["ln_eps"] if qk_norm else None, canon)
        self.ln2 = nn.LayerNorm(d, eps=cfg["ln_eps"])
        self.mlp = MLP(d, cfg["d_mlp"])
        for point, width in (("A", d), ("C", d), ("D", cfg["d_mlp"])):
            setattr(self, "canon_" + point.lower(),
                    Canon(width, canon["kernel"], canon["residual"]) if point in canon["points"] else None)
        self.record = None  # a dict: residual, attention, mlp_hidden recorded into it (record())

    def forward(self, x, ctx, pe, causal):
        xn = self.ln1(x)
        if self.canon_a is not None:
            xn = self.canon_a(xn)
        a = self.attn(xn, ctx, pe, causal)
        h = x + a
        hn = self.ln2(h)
        if self.canon_c is not None:
            hn = self.canon_c(hn)
        pre = self.mlp.fc(hn)
        if self.canon_d is not None:
            pre = self.canon_d(pre)
        hidden = F.gelu(pre)                                             # what MLP.forward computes, kept
        if self.record is not None:
            self.record.update(residual=x, attention=a, mlp_hidden=hidden)
        return h + self.mlp.proj(hidden)


class Model(nn.Module):
    """cfg: vocab, d_model, n_layers, n_heads, d_mlp, ln_eps, seq_len (the training length, which sizes a
    learned table with max_len 0), causal (optional, default true), layers (optional: pelab's [encoding]
    layers pattern, whose names may be variants "rope.global" of an encoding; other names' parameters from
    cfg["layer_params"][name]), attention.window, .chunk, .temperature_tuning (optional patterns) and the
    tuning_* settings, qk_norm (optional: pelab's [attention] qk_norm pattern of on/off), canon (optional:
    pelab's [canon] table, points/kernel/residual), loop (optional: pelab's [loop], a dict of first, blocks,
    rule, times, per_token, offset). Parameter names are pelab's checkpoint names ("pos_<name>" for a layout's
    others)."""

    def __init__(self, cfg, encoding, encoding_params=None):
        super().__init__()
        self.is_causal = cfg.get("causal", True)
        dims = dict(d_model=cfg["d_model"], n_heads=cfg["n_heads"], head_dim=cfg["d_model"] // cfg["n_heads"],
                    n_layers=cfg["n_layers"], train_len=cfg["seq_len"], causal=self.is_causal)
        pos = make_encoding(encoding, encoding_params or {}, dims)  # first: it decides the token width
        self.tok_emb = nn.Embedding(cfg["vocab"], pos.token_width(cfg["d_model"]))
        self.pos = pos                                                # registered after tok_emb, as pelab
        names = layer_pattern(cfg["layers"], cfg["n_layers"]) if cfg.get("layers") else [encoding] * cfg["n_layers"]
        self.layer_pos = []
        for name in names:                                            # "pos_<name>", in order of first use
            if name != encoding and not hasattr(self, "pos_" + name):
                setattr(self, "pos_" + name, make_encoding(name, cfg.get("layer_params", {}).get(name, {}), dims))
            self.layer_pos.append(pos if name == encoding else getattr(self, "pos_" + name))
        att = cfg.get("attention") or {}
        windows = layer_pattern(att.get("window", "0"), cfg["n_layers"], int)
        chunks = layer_pattern(att.get("chunk", "none"), cfg["n_layers"], lambda c: 0 if c == "none" else int(c))
        tuning = layer_pattern(att.get("temperature_tuning", "0"), cfg["n_layers"], lambda t: t == "1")
        norms = layer_pattern(cfg.get("qk_norm") or "off", cfg["n_layers"])  # [attention] qk_norm: on | off
        self.blocks = nn.ModuleList(Block(cfg, w, c, t, n == "on") for w, c, t, n in zip(windows, chunks, tuning, norms))
        self.ln_f = nn.LayerNorm(cfg["d_model"], eps=cfg["ln_eps"])
        self.head = nn.Linear(cfg["d_model"], cfg["vocab"], bias=False)
        self.causal = {}  # T -> (T, T) bool, True above the diagonal (future keys)
        self.record = None  # a dict: embeddings (their gradient kept), final_residual (record())
        self.loop = dict(cfg.get("loop") or {})  # pelab's [loop]: first, blocks, rule, times, per_token, offset

    def forward(self, tokens, positions):
        """tokens, positions (B, T) -> logits (B, T, V)."""
        T = tokens.shape[1]
        if T not in self.causal:
            self.causal[T] = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        causal = self.causal[T] if self.is_causal else None
        for pe in dict.fromkeys([self.pos] + self.layer_pos):
            pe.begin_forward(positions)
        self.pos.tokens = tokens  # what an input encoding derives its own ids from (Abacus's digit indices)
        emb = self.tok_emb(tokens)
        if self.record is not None and emb.requires_grad:
            emb.retain_grad()
        x = self.pos.encode_input(emb, positions)                          # (B, T, d)
        x = self.run_blocks(x, positions, shared_rows(positions), causal)
        if self.record is not None:
            self.record.update(embeddings=emb, final_residual=x)
        return self.head(self.ln_f(x))                                    # (B, T, V)


    def run_blocks(self, x, positions, shared, causal):
        """The blocks in order, pelab's [loop] group [first, end) applied loops_at(T) times, its input e added
        before every application after the first (Fan et al. 2025: input injection)."""
        loop, n_blocks = self.loop, len(self.blocks)
        first = loop.get("first", 0)
        end = first + loop["blocks"] if loop.get("blocks", 0) else n_blocks
        n = loops_at(loop, positions.shape[1])
        assert n >= 1, (loop, positions.shape[1])
        for i in range(first):
            x = self.blocks[i](x, Ctx(positions, i, shared), self.layer_pos[i], causal)
        e = x
        for r in range(n):
            if r > 0:
                x = x + e
            for i in range(first, end):
                x = self.blocks[i](x, Ctx(positions, i, shared), self.layer_pos[i], causal)
        for i in range(end, n_blocks):
            x = self.blocks[i](x, Ctx(positions, i, shared), self.layer_pos[i], causal)
        return x


def loops_at(loop, T):
    """N of pelab's [loop] at a sequence of T tokens: times (rule fixed), floor(per_token T) + offset (length)."""
    if loop.get("rule", "fixed") == "fixed":
        return loop.get("times", 1)
    return int(math.floor(loop.get("per_token", 1.0) * T)) + loop.get("offset", 0)


def record(model):
    """Turns on recording of model's insides, as pelab.Model.activations names them: returns a dict that each
    forward fills with embeddings, final_residual and layers [{residual, q, k, v, weights, attention,
    mlp_hidden}] (q, k after the encoding, before [attention] scaling; weights after the normalizer)."""
    rec = {"layers": [{} for _ in model.blocks]}
    model.record = rec
    for blk, layer in zip(model.blocks, rec["layers"]):
        blk.record = blk.attn.record = layer
    return rec


def default_positions(batch, T):
    return torch.arange(T).repeat(batch, 1)  # (B, T): 0..T-1 on every row


# ---------------------------------------------------------------- initialization
def param_kind(name):
    """pelab's ParamKind from a checkpoint name: weight | embedding | bias | norm_gain | norm_bias.
    Embeddings: the token table, a learned position table, T5's bias tables and CoPE's position embeddings
    (pos.tables.<l>.weight), Shaw's relative keys and values (pos.tables.<l>.key, .value)."""
    parts = name.split(".")
    if parts[-2] in ("ln1", "ln2", "ln_f", "q_norm", "k_norm"):
        return "norm_gain" if parts[-1] == "weight" else "norm_bias"
    if name == "pos.gain":  # multiplicative's learned gains: 1 at init, not decayed
        return "norm_gain"
    if name in ("tok_emb.weight", "pos.weight") or re.fullmatch(r"pos\.tables\.\d+\.(weight|key|value)", name):
        return "embedding"
    # nn.GRU / nn.LSTM's weight_ih_l0, weight_hh_l0 (the recurrent encoding) are weights too
    return "weight" if parts[-1] == "weight" or parts[-1].startswith("weight_") else "bias"


def init_pelab(model, std=0.02, emb_std=0.02):
    """pelab's init_parameters, in distribution (not in values: the random streams differ):
    weights N(0, std), embeddings N(0, emb_std), biases 0, LayerNorm gain 1 and bias 0."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            kind = param_kind(name)
            if re.search(r"\.canon_[abcd]\.weight$", name):  # Canon: torch's Conv1d default under every scheme
                nn.init.kaiming_uniform_(p, a=math.sqrt(5))
            elif kind in ("weight", "embedding"):
                p.normal_(0.0, std if kind == "weight" else emb_std)
            else:
                p.fill_(1.0 if kind == "norm_gain" else 0.0)


def init_fixture_weights(model):
    """Deliberately large, non-trivial values (a fixture, not a training init): N(0, 0.2) for weights and
    embeddings, N(0, 0.1) for biases, 1 + N(0, 0.1) and N(0, 0.1) for LayerNorm gain and bias, unless the
    encoding gives a value (Encoding.fixture_init). The encoding's parameters (pos.*) are drawn last so
    every encoding shares the very same other weights."""
    named = sorted(model.named_parameters(), key=lambda kv: kv[0].startswith("pos."))
    with torch.no_grad():
        for name, p in named:
            kind = param_kind(name)
            own = model.pos.fixture_init(name, p) if name.startswith("pos.") else False
            if own is not False:
                p.copy_(own)
            elif kind in ("norm_gain", "norm_bias"):
                p.copy_((1.0 if kind == "norm_gain" else 0.0) + 0.1 * torch.randn_like(p))
            elif kind == "bias":
                p.normal_(0.0, 0.1)
            else:
                p.normal_(0.0, 0.2)


# ---------------------------------------------------------------- loss and training step
def masked_ce(logits, targets, mask):
    """Cross-entropy summed over counted tokens / number of counted tokens. Targets under a zero mask
    may be -1 and are never read (clamped to a valid id, then multiplied by 0)."""
    logp = logits.log_softmax(dim=-1)
    nll = -logp.gather(-1, targets.clamp(min=0)[..., None])[..., 0]      # (B, T)
    return (nll * mask).sum() / mask.sum()


def decays(name, decay_norm_and_bias=False, decay_embeddings=True):
    """pelab's ParamGroupRule (training/optimizer.cpp): Linear weights always decay, embeddings by default,
    biases and LayerNorm parameters not by default."""
    kind = param_kind(name)
    if kind == "weight":
        return True
    return decay_embeddings if kind == "embedding" else decay_norm_and_bias


def make_adamw(model, lr, weight_decay, betas=(0.9, 0.999), eps=1e-8, **rule):
    """torch.optim.AdamW with pelab's decay groups (`rule`: decay_norm_and_bias, decay_embeddings)."""
    named = list(model.named_parameters())
    return torch.optim.AdamW([{"params": [p for n, p in named if decays(n, **rule)], "weight_decay": weight_decay},
                              {"params": [p for n, p in named if not decays(n, **rule)], "weight_decay": 0.0}],
                             lr=lr, betas=tuple(betas), eps=eps)


def lr_at(step, peak, min_lr, warmup, total, kind="cosine"):
    """training/schedule.cpp's lr_at, operation for operation (0-based step)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    if kind == "constant":
        return peak
    span = max(1.0, float(total) - float(warmup))
    p = min(max((float(step) - float(warmup)) / span, 0.0), 1.0)
    if kind == "cosine":
        return min_lr + 0.5 * (peak - min_lr) * (1 + math.cos(math.pi * p))
    assert kind == "linear", kind
    return peak + (min_lr - peak) * p


def load_batches(path):
    """pelab's training batch stream (`pelab batches CONFIG --steps N --out FILE`, experiments/run/export_batches.hpp)
    -> ([{"tokens", "targets", "positions": LongTensor (B, T), "mask": float64 (B, T)[, "digit_index"]}], metadata),
    one dict per optimizer step, each cut to its own length T: what train_step takes, in pelab's order."""
    arrays, meta = load_safetensors(path)
    if meta.get("format") != "pelab-batches-1":
        raise ValueError(f"{path}: not a pelab batch file (metadata format {meta.get('format')!r}, expected "
                         "'pelab-batches-1')")
    out = []
    for s, T in enumerate(arrays["lengths"].tolist()):
        b = {k: torch.from_numpy(arrays[k][s, :, :T].astype(np.int64)) for k in ("tokens", "targets", "positions")}
        b["mask"] = torch.from_numpy(arrays["mask"][s, :, :T].astype(np.float64))
        if "digit_index" in arrays:
            b["digit_index"] = torch.from_numpy(arrays["digit_index"][s, :, :T].astype(np.int64))
        out.append(b)
    return out, meta


def train_step(model, opt, tokens, positions, targets, mask, lr, clip_norm):
    """One step of pelab's Trainer: forward, masked CE, backward, clip (clip_norm 0 = off), AdamW at lr.
    Returns (loss, total gradient norm before clipping) as Python floats."""
    opt.zero_grad(set_to_none=True)
    loss = masked_ce(model(tokens, positions), targets, mask)
    loss.backward()
    if clip_norm > 0:
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm).item()
    else:
        norm = torch.norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None])).item()
    for g in opt.param_groups:
        g["lr"] = lr
    opt.step()
    return loss.item(), norm


# ---------------------------------------------------------------- Abacus (McLeish et al. 2024)
def abacus_digit_index(tokens, lo=4, hi=13):
    """(B, T) int -> (B, T) int64: each digit token's 1-based index within its run of consecutive digit
    tokens (ids lo..hi: pelab's addition digits, and McLeish et al.'s tokenizer's), 0 on every other token:
    the helper of github.com/mcleish7/arithmetic abacus.py, as a loop. pelab gets these ids from the task
    (Batch::digit_index) rather than from the tokens; the fixture stores them as input.digit_index."""
    digit = (tokens >= lo) & (tokens <= hi)
    out = torch.zeros(tokens.shape, dtype=torch.int64)
    for b in range(tokens.shape[0]):
        run = 0
        for t in range(tokens.shape[1]):
            run = run + 1 if digit[b, t] else 0
            out[b, t] = run
    return out


@register
class Abacus(Encoding):
    """A trainable (size, d) table indexed by the digit index, added to the embeddings (pos.weight; row 0:
    non-digits). In training every nonzero index is shifted by one k uniform in [0, max_k] per forward, drawn
    from offset_rng (pelab: the forward's dropout stream); without one, k = 0, as in pelab's parity tests."""
    name = "abacus"
    params = {"max_k": 100, "size": 0}
    relative = True  # it reads no position ids

    def __init__(self, params, dims):
        super().__init__(params, dims)
        self.size = params["size"] or dims["train_len"] + params["max_k"] + 1
        self.weight = nn.Parameter(torch.empty(self.size, dims["d_model"]))
        nn.init.normal_(self.weight)
        self.tokens, self.offset_rng = None, None

    def digit_index_of(self, tokens):
        return abacus_digit_index(tokens)

    def encode_input(self, x, positions):
        # without the tokens (a forward that does not set them: bench/torch_fast.py) every token reads row 0,
        # as pelab without a task's digit indices
        ids = abacus_digit_index(self.tokens) if self.tokens is not None else torch.zeros_like(positions)
        if self.training and self.offset_rng is not None:
            k = self.offset_rng.randint(0, self.p["max_k"])
            ids = torch.where(ids > 0, ids + k, ids)
        return x + F.embedding(ids, self.weight)


# ---------------------------------------------------------------- Transformer-XL (Dai et al. 2019)
def xl_sinusoid(d, width, base):
    """(...) int distances -> (..., 2m) float64, m = ceil(width / 2): [sin(d w_0..w_{m-1}), cos(d w_0..w_{m-1})],
    w_k = base^(-2k / width), sines first (DeepMind's sinusoid_position_encoding over the model width)."""
    m = (width + 1) // 2
    w = base ** (-2.0 * torch.arange(m, dtype=torch.float64) / width)
    a = d.to(torch.float64)[..., None] * w
    return torch.cat([torch.sin(a), torch.cos(a)], dim=-1)


@register
class TransformerXL(Encoding):
    """Dai et al. 2019 (arXiv:1901.02860) Section 3.3, written out pair by pair (no relative shift):
    A_ij = q_i.k_j + q_i.W_R R_d + u.k_j + v.W_R R_d, all over sqrt(hs); the three terms beyond q_i.k_j are the
    bias. R_d is the sinusoid of d = p_i - p_j, plus 1 under a causal mask (DeepMind's table T..1 and
    _rel_shift_causal); W_R (d_model, 2m) per layer, its rows h*hs..(h+1)*hs for head h; u, v (H, hs) per
    layer (pos.layers.<l>.weight, .u, .v). The sinusoids are rounded to float32 as pelab's table is."""
    name = "transformer_xl"
    params = {"base": 10000.0}
    relative = True

    def __init__(self, params, dims):
        super().__init__(params, dims)
        H, hs = dims["n_heads"], dims["head_dim"]
        self.width = 2 * ((H * hs + 1) // 2)
        self.layers = nn.ModuleList(nn.ParameterDict({   # no draws here: every init fills them
            "weight": nn.Parameter(torch.zeros(H * hs, self.width)),
            "u": nn.Parameter(torch.zeros(H, hs)),
            "v": nn.Parameter(torch.zeros(H, hs))}) for _ in range(dims["n_layers"]))

    def attention_bias(self, q, k, ctx):
        B, H, T, hs = q.shape
        layer = self.layers[ctx.layer]
        d = pair_difference(ctx.positions, False) + (1 if self.dims["causal"] else 0)      # (B, T, T)
        R = xl_sinusoid(d, H * hs, self.p["base"]).float().to(q.dtype)                     # (B, T, T, 2m)
        rel = torch.einsum("bijc,hdc->bhijd", R, layer["weight"].view(H, hs, self.width))  # W_R R_{d_ij} per head
        position = torch.einsum("bhid,bhijd->bhij", q + layer["v"][None, :, None, :], rel)
        content = torch.einsum("hd,bhjd->bhj", layer["u"], k)[:, :, None, :]
        return (position + content) / math.sqrt(hs)


# ---------------------------------------------------------------- a trained run's model (pelab.Run.torch_model)
MODEL_KEYS = ("d_model", "n_layers", "n_heads", "d_ff", "activation", "causal", "tie_embeddings", "ln_eps")


def twin_params(name, given, defaults):
    """The parameters of encoding `name` the twin takes, from a run's resolved [encoding.<name>] table
    (`given`, every key written). A key the twin does not model is dropped where it holds pelab's default
    (`defaults`: key -> default, from pelab.encodings()) and refused otherwise."""
    name = name.split(".")[0]                     # a variant "rope.global": its encoding's parameters
    if name not in ENCODINGS:
        raise ValueError(f"encoding '{name}' has no PyTorch twin (the twins: {', '.join(sorted(ENCODINGS))})")
    own = ENCODINGS[name].params
    given = {k: v for k, v in given.items() if not isinstance(v, dict)}  # [encoding.rope.global] inside rope's
    for k, v in given.items():
        if k not in own and (k not in defaults or v != defaults[k]):
            raise ValueError(f"encoding.{name}.{k} = {v!r}: the PyTorch twin of '{name}' does not model this "
                             f"setting (it takes {sorted(own) or 'no parameters'})")
    return {k: v for k, v in given.items() if k in own}


def model_cfg(config, vocab, train_seq_len, defaults):
    """(cfg, encoding, encoding params) of Model from a run's resolved config (config.toml as a dict)."""
    m, e = config["model"], config["encoding"]
    if m.get("activation", "gelu") != "gelu":
        raise ValueError(f"model.activation = {m['activation']!r}: the PyTorch twin has the exact GELU MLP only")
    name = e["name"]
    layers = e.get("layers", "")
    names = set(layer_pattern(layers, m["n_layers"])) if layers else {name}
    def table(n):  # [encoding.<n>], or a variant's [encoding.<encoding>.<variant>] (TOML nests it)
        base, _, variant = n.partition(".")
        return e.get(base, {}).get(variant, {}) if variant else e.get(n, {})
    params = {n: twin_params(n, table(n), defaults.get(n.split(".")[0], {})) for n in names | {name}}
    attention = dict(config.get("attention", {}))
    qk_norm = attention.pop("qk_norm", "off")
    cfg = dict(vocab=vocab, d_model=m["d_model"], n_layers=m["n_layers"], n_heads=m["n_heads"],
               d_mlp=m.get("d_ff") or 4 * m["d_model"], ln_eps=m.get("ln_eps", 1e-5), seq_len=train_seq_len,
               causal=m.get("causal", True), layers=layers, heads=e.get("heads", 0), attention=attention,
               layer_params={n: p for n, p in params.items() if n != name}, qk_norm=qk_norm,
               canon=dict(config.get("canon", {})), loop=dict(config.get("loop", {})))
    return cfg, name, params[name]


def from_run(config, weights, train_seq_len, defaults=None):
    """Model of a trained run in evaluation mode, float32: `config` its resolved config (dict of
    config.toml), `weights` name -> array (a checkpoint's weights.safetensors), `train_seq_len` the model's
    (pelab.Model.train_seq_len), `defaults` {encoding: {key: default}} of pelab's encodings. Every weight
    must find its parameter and the other way round."""
    vocab = int(weights["tok_emb.weight"].shape[0])
    cfg, name, params = model_cfg(config, vocab, train_seq_len, defaults or {})
    model = Model(cfg, name, params)
    state = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in weights.items()}
    if config["model"].get("tie_embeddings", False):
        model.head.weight = model.tok_emb.weight  # one parameter, as pelab's tied head
    params = {n for n, _ in model.named_parameters()}  # buffers (FoPE's) are rebuilt, not read
    missing = sorted(params - set(state) - ({"head.weight"} if "head.weight" not in state else set()))
    extra = sorted(set(state) - params)
    if missing or extra:
        raise ValueError(f"the PyTorch twin of this run's model does not match its checkpoint: parameters "
                         f"without a weight {missing}, weights without a parameter {extra}")
    model.load_state_dict(state, strict=False)
    return model.float().eval()
