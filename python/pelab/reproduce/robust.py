"""How firmly the seeds pin a verdict: the word's stability (the share of bootstrap resamples of the seeds that give
the same word; below STABLE the page says "unstable" and shows the distribution of words) and a percentile interval
beside every number the rule aggregates."""
import random

from .stats import interval

RESAMPLES = 1000
STABLE = 0.80
SEED = 44  # the number: a fixed seed, so a page regenerated from the same results is the same page


def bootstrap(t, judge, ctx, word, resamples=None, seed=SEED):
    """Resample the seeds with replacement (one draw for every group: seed i of the resample is the same seed in
    each group) and judge again. -> {resamples, share of `word`, {word: share}, {number: (low, high)}}."""
    resamples = resamples or RESAMPLES
    rng = random.Random(seed)
    ids = t.seed_ids()
    words, numbers = {}, {}
    for _ in range(resamples):
        draw = [rng.choice(ids) for _ in ids]
        try:
            f = judge(t.resample(draw), ctx)
        except (ZeroDivisionError, ValueError):
            f = {"word": "undefined (a resample the rule cannot judge)", "numbers": {}}
        words[f["word"]] = words.get(f["word"], 0) + 1
        for k, v in f["numbers"].items():
            numbers.setdefault(k, []).append(v)
    return {"resamples": resamples, "share": words.get(word, 0) / resamples,
            "words": {w: n / resamples for w, n in sorted(words.items(), key=lambda x: -x[1])},
            "intervals": {k: interval(v) for k, v in numbers.items()}}


def distribution(b):
    return ", ".join(f"{w.removeprefix('is ')} {100 * s:.0f}%" for w, s in b["words"].items())


def stable_word(word, b):
    """The word the page prints: the rules' word, or "unstable" with the distribution when resamples disagree."""
    if b["share"] >= STABLE:
        return word
    return f"is unstable (bootstrap over the seeds: {distribution(b)}; the seeds as run give: {word.removeprefix('is ')})"


def text(b, numbers):
    """The page's stability line and the intervals of the rule's numbers."""
    lines = [f"**Stability:** {100 * b['share']:.1f}% of {b['resamples']} bootstrap resamples of the seeds (fixed seed "
             f"{SEED}) give the same word ({distribution(b)}); below {100 * STABLE:.0f}% the page says unstable."]
    if numbers:
        lines.append("")
        lines.append("The numbers the rule aggregates, with 95% percentile intervals over the same resamples:")
        lines.append("")
        for k, v in numbers.items():
            iv = b["intervals"].get(k)
            val = "n/a" if v is None else f"{v:.3g}" if abs(v) < 1 else f"{v:.1f}"
            ivs = "" if iv is None else f" [{iv[0]:.3g}, {iv[1]:.3g}]" if abs(iv[1]) < 1 else f" [{iv[0]:.1f}, {iv[1]:.1f}]"
            lines.append(f"- {k}: {val}{ivs}")
    return "\n".join(lines)
