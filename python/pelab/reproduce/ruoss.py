"""ruoss: randomized positions' gain in token accuracy beyond the training length, per task × encoding pair whose
two groups (contiguous, randomized ids) pass the gate; the pairs' average judged per seed."""
from . import common as c
from .stats import mean_sd, separated

TITLE = "Ruoss et al. 2023, randomized positional encodings"
MODES = ("contiguous", "randomized")
LIMIT = ("Limit: Ruoss et al.'s +12.0 is test accuracy averaged over test lengths 41–500 and then over 15 tasks of "
         "the Chomsky-hierarchy suite and their encodings; pelab's gain is token accuracy averaged over sizes {ood} "
         "on 2 of those tasks (copy and reverse, among the easiest) and {n_enc} encodings. The two numbers are not "
         "the same quantity: the verdict judges only the direction and spread of the gain on copy and reverse, not "
         "the paper's 15-task average.")


def judge(t, ctx):
    ood, ind = t.lengths(False), max(t.lengths(True))
    tasks, encs = t.key_values("task.name"), t.key_values("encoding.name")
    pairs, rows = [], []
    for task in tasks:
        for enc in encs:
            kw = {p: {"task_name": task, "encoding_name": enc, "train_positions": p} for p in MODES}
            cells = {p: t.cell("token_acc", ind, **kw[p]) for p in MODES}
            gates = {p: c.gate_accuracy(cells[p]) for p in MODES}
            scores = {p: t.seed_scores("token_acc", ood, **kw[p]) for p in MODES}
            st = {p: mean_sd(list(scores[p].values())) for p in MODES}
            ok = all(gates[p][0] for p in MODES) and all(st[p][0] is not None for p in MODES)
            gain = None if None in (st["randomized"][0], st["contiguous"][0]) else st["randomized"][0] - st["contiguous"][0]
            state = ("not comparable (gate)" if not ok else "gain" if separated(st["randomized"], st["contiguous"])
                     else "loss" if separated(st["contiguous"], st["randomized"]) else "tie (seeds)")
            rows.append({"task": task, "enc": enc, "cells": cells, "gates": gates, "st": st, "gain": gain, "state": state})
            if ok:
                pairs.append((scores, gain, state))
    if not pairs:
        return {"word": c.NOT_COMPARABLE, "numbers": {}, "rows": rows, "pairs": 0, "ood": ood, "ind": ind, "encs": encs}
    common = set.intersection(*(set(s[p]) for s, _, _ in pairs for p in MODES))
    rep = {p: mean_sd([sum(s[p][k] for s, _, _ in pairs) / len(pairs) for k in sorted(common)]) for p in MODES}
    sep = separated(rep["randomized"], rep["contiguous"])
    mean_gain = sum(g for _, g, _ in pairs) / len(pairs)
    n_sep = sum(st == "gain" for _, _, st in pairs)
    word = (c.REPRODUCES if sep and mean_gain >= 0.06 and n_sep > len(pairs) / 2
            else c.PARTLY if sep and mean_gain > 0.01 else c.NOT)
    return {"word": word, "rows": rows, "pairs": len(pairs), "rep": rep, "sep": sep, "gain": mean_gain, "n_sep": n_sep,
            "ood": ood, "ind": ind, "encs": encs,
            "numbers": {"mean gain over the comparable pairs (points)": 100 * mean_gain,
                        "per seed, the pairs' average, randomized (%)": _p(rep["randomized"][0]),
                        "per seed, the pairs' average, contiguous (%)": _p(rep["contiguous"][0])}}


def _p(x):
    return None if x is None else 100 * x


def render(t, ctx, f):
    body = []
    for r in f["rows"]:
        st, thr = r["st"], r["gates"]["randomized"][1] or r["gates"]["contiguous"][1]
        body.append([r["task"], r["enc"]] + [c.mean_std(r["cells"][p]) + ("" if r["gates"][p][0] else " ✗") for p in MODES]
                    + [c.pct(thr), c.pct(st["contiguous"][0]), c.pct(st["randomized"][0]),
                       "n/a" if r["gain"] is None else f"{100 * r['gain']:+.1f}", r["state"]])
    ood = f["ood"]
    tables = (f"Token accuracy (%): in distribution (size {f['ind']}, mean ± sample std (seeds); ✗ = fails the competence "
              f"gate, whose threshold is the next column) and each seed's mean over the out-of-distribution sizes "
              f"{', '.join(map(str, ood))}, averaged over seeds; gain = randomized − contiguous, in points; the last column "
              "applies the seed-level tie rule:\n\n"
              + c.md_table(["task", "encoding", "in-dist contiguous", "in-dist randomized", "gate: needs ≥",
                            "OOD contiguous", "OOD randomized", "gain (points)", "seeds"], body))
    excluded = [f"{r['task']} × {r['enc']}" for r in f["rows"] if r["state"] == "not comparable (gate)"]
    limit = LIMIT.format(ood="–".join(map(str, (ood[0], ood[-1]))) if ood else "n/a", n_enc=len(f["encs"]))
    gain = "n/a" if "gain" not in f else f"{100 * f['gain']:+.1f}"
    per_seed = "" if "rep" not in f else (
        f"; per seed, the pairs' average is {c.pct(f['rep']['randomized'][0])} randomized against "
        f"{c.pct(f['rep']['contiguous'][0])} contiguous: " + ("separated" if f["sep"] else "a tie (seeds)"))
    verdict = (f"Randomized positions' length-generalization gain on copy and reverse {ctx['word']} at toy scale: mean "
               f"gain in token accuracy beyond the training length {gain} points over the {f['pairs']} task × encoding "
               f"pairs that pass the competence gate ({f.get('n_sep', 0)} with a gain the seeds separate{per_seed}"
               + (f"; {len(excluded)} pair(s) not comparable: {'; '.join(excluded)}" if excluded else "") + "). " + limit)
    comparison = c.md_table(["", "Ruoss et al. 2023", "pelab"],
                            [["gain beyond the training length (points)",
                              "+12.0: accuracy averaged over lengths 41–500, then over 15 tasks and the encodings",
                              f"{gain}: token accuracy averaged over sizes {', '.join(map(str, ood))}, then over "
                              f"{f['pairs']} pairs (copy, reverse)"],
                             ["pairs with a gain", "most", f"{f.get('n_sep', 0)}/{f['pairs']} separated by the seeds"]])
    checks = c.checks_text(
        f"every task × encoding × positions group: {c.GATE_ACC_TEXT}; metric token accuracy at size {f['ind']}. A pair "
        "(contiguous, randomized) enters the mean gain only when both of its groups pass.",
        c.TIE_TEXT + " (score: a seed's token accuracy averaged over the out-of-distribution sizes, from results.csv). "
                     "Reproduces: per seed, the comparable pairs' average separated above with randomized ids, a mean gain "
                     "≥ 6 points and more than half of the pairs with a separated gain; partly: the per-seed average "
                     "separated and a mean gain > 1 point; otherwise does not reproduce.",
        c.budget_policy(ctx["config"], ctx["quick"]))
    return verdict, comparison, tables, checks
