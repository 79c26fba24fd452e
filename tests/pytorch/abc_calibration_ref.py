"""A second, numpy-only version of ABC's calibration arithmetic (Duan et al. 2023, arXiv 2310.11984,
Algorithm 1; pelab's is layers/positional/abc_bias.cpp: accumulate_abc_lines + calibrate_abc), and the
fixture tests/fixtures/abc_calibration.safetensors that tests/layers/test_abc.cpp compares pelab with.

The fixture is a random causal attention tensor (B, H, T, T) with position ids that have gaps and rows
that do not count, and the biases this file computes from it. The draw is chosen (and checked here) so
that a wrong variant keeps other lines: the line sum instead of its mean, a threshold of mean + 1 std or
mean + 0.5 std instead of mean + 0.87 std, or the sample std (ddof 1) instead of the population std.
Written by `gen_fixtures.py abc_calibration` (numpy only: no torch involved)."""
import numpy as np

LAMBDA, MASKED = 0.87, -1e4
B, H, T = 3, 3, 10


def lines_of(probs, positions, rows):
    """Per id difference d = p_i - p_j over counted rows i and causal keys j <= i: the per-head sums of the
    probabilities on it (H,) and how many (example, query, key) entries it had."""
    d = positions[:, :, None].astype(np.int64) - positions[:, None, :]  # (B, T, T)
    on = (rows[:, :, None] != 0) & np.tril(np.ones((T, T), bool))[None]  # (B, T, T)
    out = {}
    for v in np.unique(d[on]):
        sel = on & (d == v)
        out[int(v)] = (probs.transpose(1, 0, 2, 3)[:, sel].sum(axis=1), int(sel.sum()))
    return out


def calibrate(lines, lam=LAMBDA, masked=MASKED, reduce="mean", ddof=0):
    """Per head: kept {d: value} and the value of every other line (0 when nothing is kept)."""
    heads = []
    ds = sorted(lines)
    for h in range(H):
        vals = np.array([lines[d][0][h] / (lines[d][1] if reduce == "mean" else 1) for d in ds])
        threshold = vals.mean() + lam * vals.std(ddof=ddof)
        kept = {d: float(v - vals.max()) for d, v in zip(ds, vals) if v > threshold}
        margin = np.abs(vals - threshold).min()
        heads.append((kept, masked if kept else 0.0, margin))
    return heads


def draw(seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1, (B, H, T, T))
    for h, lag in enumerate((0, 2, 5)):  # a preferred line per head, so the heads keep different lines
        for i in range(lag, T):
            logits[:, h, i, i - lag] += 2.5
    logits = np.where(np.tril(np.ones((T, T), bool)), logits, -np.inf)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs = (probs / probs.sum(-1, keepdims=True)).astype(np.float32)  # pelab reads float32 exactly
    positions = np.stack([np.sort(rng.choice(16, T, replace=False)) for _ in range(B)]).astype(np.int32)
    rows = (rng.random((B, T)) < 0.7).astype(np.float32)
    rows[:, 0] = 0
    return probs, positions, rows


def variants_differ(lines):
    """Whether each wrong variant keeps other lines than the right one in at least one head."""
    right = [k for k, _, _ in calibrate(lines)]
    wrong = [calibrate(lines, reduce="sum"), calibrate(lines, lam=1.0), calibrate(lines, lam=0.5),
             calibrate(lines, ddof=1)]
    return all(any(set(k) != set(r) for (k, _, _), r in zip(w, right)) for w in wrong)


def build():
    """The fixture's tensors: the first seed whose draw tells every wrong variant apart, with no line mean
    within 1e-6 of its head's threshold (float32 builds agree on what is kept)."""
    for seed in range(1000):
        probs, positions, rows = draw(seed)
        lines = lines_of(probs.astype(np.float64), positions, rows)
        heads = calibrate(lines)
        if variants_differ(lines) and min(m for _, _, m in heads) > 1e-6:
            break
    else:
        raise AssertionError("no seed in 0..999 tells the wrong variants apart")
    ds = sorted(lines)
    bias = np.array([[kept.get(d, masked) for d in ds] for kept, masked, _ in heads])  # (H, lines)
    return {
        "probs": probs, "positions": positions, "rows": rows,
        "expected.d": np.array(ds, np.int32),
        "expected.count": np.array([lines[d][1] for d in ds], np.int32),
        "expected.bias": bias.astype(np.float64),
        "expected.masked": np.array([m for _, m, _ in heads], np.float64),
    }, {"lambda": repr(LAMBDA), "masked": repr(MASKED), "seed": str(seed)}
