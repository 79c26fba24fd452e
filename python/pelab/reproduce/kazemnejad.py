"""kazemnejad: exact match per task beyond the training length; per task, ranks with the seed-level tie rule, only
on tasks every encoding learned in distribution; MRR across those tasks; the order against the paper's by an
exact permutation test of Kendall's tau."""
from . import common as c
from .stats import ALPHA, kendall_tau, mean_sd, rank_rule_text, tau_p_value, tie_ranks

TITLE = "Kazemnejad et al. 2023, positional encodings and length generalization"
PAPER_MRR = {"none": 0.69, "t5": 0.55, "alibi": 0.50, "rope": 0.33, "sinusoidal": 0.22}


def task_facts(t, task, encs, ind, ood):
    """Per encoding: gate, seed-score stats, table row; whether some encoding is 5 points above chance beyond L."""
    stats, fails, rows, informative = {}, [], [], False
    for enc in encs:
        kw = {"task_name": task, "encoding_name": enc}
        c_ind = t.cell("exact_match", ind, **kw)
        ok, thr = c.gate_accuracy(c_ind)
        if not ok:
            fails.append(f"{enc} {c.mean_std(c_ind)}")
        stats[enc] = mean_sd(list(t.seed_scores("exact_match", ood, **kw).values()))
        cells = [t.cell("exact_match", L, **kw) for L in ood]
        chance = [x["chance"] for x in cells if x is not None and x["chance"] is not None]
        if stats[enc][0] is not None and stats[enc][0] - (sum(chance) / len(chance) if chance else 0.0) >= 0.05:
            informative = True
        rows.append([task, enc, c.mean_std(c_ind) + ("" if ok else " ✗"), c.pct(thr)] + [c.mean_std(x) for x in cells])
    return stats, fails, rows, informative


def judge(t, ctx):
    ood, ind = t.lengths(False), max(t.lengths(True))
    tasks, encs = t.key_values("task.name"), t.key_values("encoding.name")
    out = {"ood": ood, "ind": ind, "tasks": tasks, "encs": encs, "rows": [], "ranked": [], "excluded": [],
           "informative": [], "ranks": {}, "groups": {}, "numbers": {}}
    for task in tasks:
        stats, fails, rows, informative = task_facts(t, task, encs, ind, ood)
        out["rows"] += rows
        if fails:
            out["excluded"].append(f"{task} ({', '.join(fails)})")
            continue
        out["ranked"].append(task)
        out["ranks"][task], groups = tie_ranks(stats)
        out["groups"][task] = " > ".join(" = ".join(g) for g in groups)
        if informative:
            out["informative"].append(task)
    if not out["ranked"]:
        out["word"] = c.NOT_COMPARABLE
        return out
    mrr = {e: sum(1 / out["ranks"][k][e] for k in out["ranked"]) / len(out["ranked"]) for e in encs}
    common = {e: mrr[e] for e in encs if e in PAPER_MRR}
    paper = {e: PAPER_MRR[e] for e in common}
    tau = kendall_tau(common, paper) if len(common) > 1 else None
    p = tau_p_value(common, paper) if len(common) > 1 else None
    out.update(mrr=mrr, tau=tau, p=p, n_common=len(common))
    out["word"] = (c.NOT if tau is None or p >= ALPHA else c.PARTLY if len(out["informative"]) < 3 else c.REPRODUCES)
    out["numbers"] = {f"MRR {e}": mrr[e] for e in encs}
    out["numbers"]["Kendall tau with the paper's order"] = tau
    return out


def render(t, ctx, f):
    ood, ind, encs = f["ood"], f["ind"], f["encs"]
    tables = (f"Exact match (%) at the largest training size {ind} and beyond it (mean ± sample std (seeds)); "
              f"✗ = fails the competence gate (threshold in the next column):\n\n"
              + c.md_table(["task", "encoding", f"{ind} (in dist.)", "gate: needs ≥"] + [str(L) for L in ood], f["rows"]))
    if f["excluded"]:
        tables += ("\n\nNot ranked (some encoding fails the competence gate, so an out-of-distribution failure there "
                   f"is not a length-generalization failure): {'; '.join(f['excluded'])}.")
    checks = c.checks_text(
        f"every task × encoding: {c.GATE_ACC_TEXT}; metric exact match at size {ind}. A task is ranked only when every "
        "encoding passes on it.",
        c.TIE_TEXT + " (score: a seed's exact match averaged over the out-of-distribution sizes, from results.csv); tied "
                     "encodings share the average rank of their group (groups chain: each member overlaps the next).",
        c.budget_policy(ctx["config"], ctx["quick"]),
        rank_rule_text(f.get("n_common", len(encs))) + ". Reproduces: that, and at least 3 ranked tasks on which some "
        "encoding is ≥ 5 points above chance beyond the training length; partly: that, on fewer such tasks; otherwise "
        "does not reproduce.")
    if not f["ranked"]:
        verdict = (f"Kazemnejad et al.'s ranking {ctx['word']}: on none of the {len(f['tasks'])} tasks does every encoding "
                   "pass the competence gate in distribution.")
        comparison = c.md_table(["encoding", "MRR, Kazemnejad et al. 2023 (10 tasks)", "MRR, pelab"],
                                [[e, f"{PAPER_MRR[e]:.2f}", "not comparable"] for e in PAPER_MRR])
        return verdict, comparison, tables, checks
    return ranked_texts(ctx, f, tables, checks)


def ranked_texts(ctx, f, tables, checks):
    mrr, ranked, encs = f["mrr"], f["ranked"], f["encs"]
    order_e = sorted(encs, key=lambda e: -mrr[e])
    tables += (f"\n\nRanks per ranked task (by exact match averaged over sizes {', '.join(map(str, f['ood']))}, per seed, "
               "then mean over seeds; encodings the seeds cannot separate share the average rank) and the mean reciprocal "
               "rank over the ranked tasks (the paper's aggregation):\n\n"
               + c.md_table(["encoding"] + ranked + ["MRR (pelab)", "MRR (paper)"],
                            [[e] + [f"{f['ranks'][k][e]:g}" for k in ranked]
                             + [f"{mrr[e]:.2f}", f"{PAPER_MRR.get(e, float('nan')):.2f}"] for e in order_e])
               + "\n\nOrder per task with ties: " + "; ".join(f"{k}: {f['groups'][k]}" for k in ranked) + ".")
    tables += (f"\n\nRanked tasks on which some encoding is at least 5 points above chance beyond the training length: "
               f"{', '.join(f['informative']) or 'none'}; on the others every rank is a tie or noise around chance.")
    order = " > ".join(" = ".join(f"{e} {mrr[e]:.2f}" for e in order_e if abs(mrr[e] - m) < 1e-9)
                       for m in sorted(set(round(x, 9) for x in mrr.values()), reverse=True))
    tau, p, n_inf = f["tau"], f["p"], len(f["informative"])
    verdict = (f"Kazemnejad et al.'s ranking {ctx['word']} at toy scale: pelab's order by mean reciprocal rank (of exact "
               f"match beyond the training length) over the {len(ranked)} of {len(f['tasks'])} tasks every encoding "
               f"learned ({', '.join(ranked)}) is {order} (paper, 10 tasks: none 0.69 > t5 0.55 > alibi 0.50 > rope 0.33 > "
               f"sinusoidal 0.22); Kendall tau with the paper's order {'n/a' if tau is None else f'{tau:+.2f}'}, reached "
               f"by a random order with probability {'n/a' if p is None else f'{p:.3f}'} (needs < {ALPHA:g}); {n_inf} of "
               f"{len(ranked)} ranked tasks separate the encodings above chance"
               f"{' (fewer than 3: at most partly)' if n_inf < 3 else ''}.")
    comparison = c.md_table(["encoding", "MRR, Kazemnejad et al. 2023 (10 tasks)", f"MRR, pelab ({len(ranked)} ranked tasks)"],
                            [[e, f"{PAPER_MRR[e]:.2f}", f"{mrr[e]:.2f}" if e in mrr else "not run"] for e in PAPER_MRR])
    return verdict, comparison, tables, checks
