"""press: held-out loss per position at the longest context: the rise past L relative to the last bucket inside it,
after a competence gate against the best interpolated byte n-gram up to 4 bytes on the same split, and a check
that the model's loss keeps falling with position inside L (by more than that n-gram's own fall). Per-position
losses come from each run's eval.json, kept in the table as the metrics `loss@FROM-TO` at the longest length."""
from . import common as c
from . import ngram
from .stats import mean_sd, separated
from .table import PageError

TITLE = "Press et al. 2022, ALiBi: train short, test long"
LM_MARGIN = 0.10    # inside L, the model's held-out loss must be >= 0.10 nats/char below the best n-gram's
FALL_MARGIN = 0.01  # and its loss must fall from the second-last to the last bucket inside L by 0.01 nats more than the n-gram's


def baseline(config):
    """The n-gram baselines of the recipe's corpus and split (computed once per page)."""
    cfg = c.load_config(config)
    lm = cfg.get("task", {}).get("char_lm", {})
    corpus, holdout = lm.get("path", "/usr/share/games/fortunes/literature"), float(lm.get("holdout", 0.1))
    train_len = int(cfg.get("task", {}).get("train_len", 64))
    try:
        bigram = ngram.bigram_loss(corpus, holdout)
        losses, best = ngram.best_ngram(corpus, holdout)
        curve = ngram.position_curve(corpus, holdout, best, train_len)
    except (OSError, ngram.NgramError) as e:
        raise PageError(f"the n-gram baselines need the recipe's corpus: {e}")
    return {"corpus": corpus, "holdout": holdout, "bigram": bigram, "losses": losses, "best": best, "curve": curve}


def buckets_of(t):
    """[(from, to, metric)] of the per-position metrics, by position, and the length they were measured at."""
    ms = {(m, L) for (g, m, L) in t.vals if m.startswith("loss@")}
    if not ms:
        raise PageError("no per-position losses (loss@FROM-TO: each run's eval.json buckets)")
    at = max(L for _, L in ms)
    out = sorted((int(m[5:].split("-")[0]), int(m[5:].split("-")[1]), m) for m, L in ms if L == at)
    return out, at


def encoding_facts(t, enc, train_len, buckets, at, ng):
    cell = t.cell("loss", train_len, encoding_name=enc)
    inside = [b for b in buckets if b[1] <= train_len]
    beyond = [b for b in buckets if b[0] >= train_len]
    per = {b[2]: t.seeds(b[2], at, encoding_name=enc) for b in buckets}
    seeds = set.intersection(*(set(v) for v in per.values())) if per else set()
    rise = mean_sd([sum(per[b[2]][s] for b in beyond) / len(beyond) / per[inside[-1][2]][s] - 1
                    for s in sorted(seeds)] if inside and beyond else [])
    fall = mean_sd([per[inside[-2][2]][s] - per[inside[-1][2]][s] for s in sorted(seeds)] if len(inside) > 1 else [])
    cv = ng["curve"]
    ng_fall = (sum(cv[inside[-2][0]:inside[-2][1]]) / (inside[-2][1] - inside[-2][0])
               - sum(cv[inside[-1][0]:inside[-1][1]]) / (inside[-1][1] - inside[-1][0])) if len(inside) > 1 else None
    best = ng["losses"][ng["best"]]
    below = cell is not None and cell["mean"] <= best - LM_MARGIN
    falls = fall[0] is not None and ng_fall is not None and fall[0] > ng_fall + FALL_MARGIN
    means = [None if not per[b[2]] else sum(per[b[2]].values()) / len(per[b[2]]) for b in buckets]
    return {"cell": cell, "rise": rise, "fall": fall, "ng_fall": ng_fall, "below": below, "falls": falls,
            "gate": below and falls, "means": means}


def judge(t, ctx):
    train_len = min(t.lengths(True))
    buckets, at = buckets_of(t)
    ng = ctx["ngram"]
    e = {enc: encoding_facts(t, enc, train_len, buckets, at, ng) for enc in t.key_values("encoding.name")}
    out = {"train_len": train_len, "buckets": buckets, "at": at, "enc": e, "numbers": {}}
    for enc, f in e.items():
        out["numbers"][f"rise past L, {enc} (%)"] = None if f["rise"][0] is None else 100 * f["rise"][0]
    if not (e.get("alibi", {}).get("gate") and e.get("sinusoidal", {}).get("gate")):
        out["word"] = c.NOT_COMPARABLE
        return out
    alibi, sin = e["alibi"]["rise"][0], e["sinusoidal"]["rise"][0]
    flat = 1 if alibi <= 0.05 else 0.5 if alibi <= 0.15 else 0
    sharp = 1 if sin >= 0.25 else 0.5 if sin >= 0.10 else 0
    contrast = separated(e["sinusoidal"]["rise"], e["alibi"]["rise"])
    out.update(flat=flat, sharp=sharp, contrast=contrast)
    out["numbers"]["sinusoidal − ALiBi rise (points)"] = 100 * (sin - alibi)
    out["word"] = (c.REPRODUCES if contrast and flat == 1 and sharp == 1
                   else c.PARTLY if contrast and flat + sharp > 0 else c.NOT)
    return out


def rise_text(f):
    r = f["rise"]
    return "n/a" if r[0] is None else f"{100 * r[0]:+.1f}%" + ("" if r[1] is None else f" ± {100 * r[1]:.1f}")


def gate_rows(f, ng):
    best = ng["losses"][ng["best"]]
    rows = []
    for enc, x in f["enc"].items():
        cl = x["cell"]
        loss = "n/a" if cl is None else f"{cl['mean']:.3f}" + (f" ± {cl['std']:.3f}" if cl["std"] is not None else "") + f" ({cl['n']})"
        fall = "n/a" if x["fall"][0] is None else f"{x['fall'][0]:+.3f}"
        rows.append([enc, loss, "n/a" if cl is None else f"{cl['mean'] - best:+.3f}", "yes" if x["below"] else "no",
                     fall, "n/a" if x["ng_fall"] is None else f"{x['ng_fall']:+.3f}", "yes" if x["falls"] else "no",
                     "passes" if x["gate"] else "fails"])
    return rows


def render(t, ctx, f):
    ng, L = ctx["ngram"], f["train_len"]
    best = ng["losses"][ng["best"]]
    bigram, vocab, n_train, n_pairs = ng["bigram"]
    grams = ", ".join(f"{n}-gram {x:.3f}" for n, x in sorted(ng["losses"].items()))
    b = [x for x in f["buckets"] if x[1] <= L]
    tables = (f"Competence gate: held-out loss inside the training context (metric loss at length {L}, mean over "
              f"seeds) against interpolated Witten-Bell byte n-grams fitted on the same training split ({n_train} bytes "
              f"of `{ng['corpus']}`, vocabulary of {vocab} bytes) and scored on the same held-out split (last "
              f"{ng['holdout']:g} of the file): {grams} nats/char (the add-one bigram of earlier pages: {bigram:.3f}); "
              f"the best, the {ng['best']}-gram, {best:.3f}. The model must be {LM_MARGIN:.2f} below it, and its loss must "
              f"fall from positions {b[-2][0]}–{b[-2][1]} to {b[-1][0]}–{b[-1][1]} by more than the {ng['best']}-gram's "
              f"own fall there (a model with a few bytes of context gains only over the first positions) + {FALL_MARGIN:g}:"
              "\n\n" + c.md_table(["encoding", f"loss at context {L} (nats/char, mean ± std (seeds))", "model − best n-gram",
                                   f"≤ −{LM_MARGIN:.2f}", "fall inside L (model)", f"fall ({ng['best']}-gram)", "falls more",
                                   "gate"], gate_rows(f, ng))
              + f"\n\nHeld-out loss (nats per character) per position bucket at context {f['at']} (training context {L}; "
              "mean over seeds):\n\n"
              + c.md_table(["encoding"] + [f"{x[0]}–{x[1]}" for x in f["buckets"]],
                           [[enc] + ["n/a" if m is None else f"{m:.3f}" for m in x["means"]] for enc, x in f["enc"].items()])
              + "\n\nRelative rise in held-out loss = mean loss of the buckets past the training context / loss of the last "
              "bucket inside it − 1, per seed, mean ± sample std: "
              + ", ".join(f"{enc} {rise_text(x)}" for enc, x in f["enc"].items()) + ".")
    e = f["enc"]
    failed = [enc for enc, x in e.items() if not x["gate"]]
    parts = (f"ALiBi {rise_text(e['alibi'])} (flat: within +5%, +15% half), sinusoidal {rise_text(e['sinusoidal'])} "
             f"(sharp: ≥ +25%, +10% half), sinusoidal above ALiBi beyond the seed spread: "
             f"{'yes' if f.get('contrast') else 'no'}") if "contrast" in f else "the claim is not judged"
    verdict = (f"Press et al.'s extrapolation claim {ctx['word']} at toy scale. Competence gate: inside the training "
               f"context the held-out loss must be ≥ {LM_MARGIN:.2f} nats/char below the best byte n-gram up to 4 bytes "
               f"({best:.3f}) and keep falling with position; "
               + (f"fails: {', '.join(failed)}" if failed else "every encoding passes") + f". Relative rise past L: {parts}.")
    comparison = c.md_table(["encoding", "Press et al. 2022 (WikiText-103, L = 512; perplexity)",
                             "pelab: relative rise in held-out loss past L (nats/char)"],
                            [["ALiBi", "flat or improving out to many times L", rise_text(e.get("alibi", {"rise": (None,)}))],
                             ["sinusoidal", "perplexity rises sharply within a short distance past L",
                              rise_text(e.get("sinusoidal", {"rise": (None,)}))],
                             ["RoPE", "rises, more slowly than sinusoidal", rise_text(e.get("rope", {"rise": (None,)}))]])
    checks = c.checks_text(
        f"per encoding: the held-out loss inside the training context (length {L}, mean over seeds) ≤ the best "
        f"interpolated Witten-Bell byte n-gram (orders 2–4) − {LM_MARGIN:.2f} nats/char, on the same split "
        "(`python/pelab/reproduce/ngram.py`), and the loss falls from the second-last to the last bucket inside the "
        f"context by more than the n-gram's own fall there + {FALL_MARGIN:g} nats. ALiBi or sinusoidal failing it: the "
        "verdict is not comparable.",
        c.TIE_TEXT + " (score: a seed's relative rise). Reproduces: ALiBi flat (≤ +5%), sinusoidal sharp (≥ +25%) and "
                     "the sinusoidal rise separated above ALiBi's; partly: separated, with ALiBi ≤ +15% or sinusoidal ≥ "
                     "+10%; otherwise does not reproduce.",
        c.budget_policy(ctx["config"], ctx["quick"]))
    return verdict, comparison, tables, checks
