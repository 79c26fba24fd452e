"""deletang: Delétang et al. 2023 (arXiv 2207.02098) and Ruoss et al. 2023 (arXiv 2305.16843) on the 15 tasks of the
Chomsky-hierarchy suite in the blank output format. A run (one seed x one learning rate) scores its token accuracy
averaged over the sizes above training (the papers' score); a group (task x encoding x positions) aggregates its
runs as the papers' tables do, the max, with the mean beside it. Claim A: randomized ids raise that score (Ruoss
et al.'s +12.0). Claim B: transformers fail on non-regular tasks (Delétang et al.), judged against a control that
can fail: with contiguous ids, the regular tasks' competent pairs above the non-regular tasks' (scores put on a
0..1 scale from chance to 100%) by a permutation test over the tasks, and no non-regular pair generalizing."""
from . import common as c
from .stats import ALPHA, mean_sd, permutation_p, separated

TITLE = "Delétang et al. 2023 and Ruoss et al. 2023, the Chomsky-hierarchy suite"
LEVEL = {"even_pairs": "R", "modular_arithmetic": "R", "parity_check": "R", "cycle_navigation": "R",
         "stack_manipulation": "DCF", "reverse_string": "DCF", "modular_arithmetic_brackets": "DCF",
         "solve_equation": "DCF"}  # the suite's other seven tasks are context-sensitive (docs/tasks.md)
RUOSS_GAIN = 0.12  # Ruoss et al.'s abstract: randomized positions raise test accuracy by 12.0 points on average
MODES = ("contiguous", "randomized")


def group_facts(t, kw_base, lrs, ind, ood):
    """One (task, encoding, positions) group: the gate at the best learning rate (by the in-distribution mean; under
    [protocol] select the table holds only the learning rate chosen on the validation split: protocol.apply), its
    seeds' OOD scores, their stats, the max over every run (seeds x learning rates), the mean chance beyond L."""
    best, best_kw, every, runs = None, None, [], {}
    for lr in lrs:
        kw = dict(kw_base, **({} if lr is None else {"train_lr": lr}))
        cell = t.cell("token_acc", ind, **kw)
        scores = t.seed_scores("token_acc", ood, **kw)
        every += scores.values()
        if cell is not None and (best is None or cell["mean"] > best["mean"]):
            best, best_kw, runs = cell, kw, scores
    ok, thr = c.gate_accuracy(best)
    chance = [t.chance.get((t.group(**best_kw), "token_acc", L)) for L in ood] if best_kw else []
    chance = [x for x in chance if x is not None]
    return {"cell": best, "gate": ok, "thr": thr, "runs": runs, "lr": None if best_kw is None else best_kw.get("train_lr"),
            "max": max(every, default=None), "stats": mean_sd(list(runs.values())),
            "chance": sum(chance) / len(chance) if chance else None}


def groups_of(t):
    ind, ood = max(t.lengths(True)), t.lengths(False)
    lrs = t.key_values("train.lr") or [None]
    return {(task, enc, pos): group_facts(t, {"task_name": task, "encoding_name": enc, "train_positions": pos}, lrs, ind, ood)
            for task in t.key_values("task.name") for enc in t.key_values("encoding.name")
            for pos in t.key_values("train.positions")}


def per_seed_average(groups, keys, f=lambda g, s: g["runs"][s]):
    """mean_sd over the seeds common to every group of `keys` of the groups' average f(group, seed)."""
    common = set.intersection(*(set(groups[k]["runs"]) for k in keys))
    return mean_sd([sum(f(groups[k], s) for k in keys) / len(keys) for s in sorted(common)])


def gain(groups, tasks, encs):
    """Claim A: randomized − contiguous beyond the training length over the (task, encoding) pairs whose two groups
    pass the gate (NoPE left out: it reads no ids, it is the control). Holds: per seed the pairs' average separated
    above with randomized ids and a gain of the max ≥ half the paper's +12.0; half: separated, a smaller positive gain."""
    pairs = [(t, e) for t in tasks for e in encs if e != "none"
             and all(groups[(t, e, p)]["gate"] and groups[(t, e, p)]["max"] is not None for p in MODES)]
    if not pairs:
        return None
    avg = lambda f: sum(f(t, e) for t, e in pairs) / len(pairs)
    gain_max = avg(lambda t, e: groups[(t, e, "randomized")]["max"] - groups[(t, e, "contiguous")]["max"])
    gain_mean = avg(lambda t, e: groups[(t, e, "randomized")]["stats"][0] - groups[(t, e, "contiguous")]["stats"][0])
    rep = {p: per_seed_average(groups, [(t, e, p) for t, e in pairs]) for p in MODES}
    sep = separated(rep["randomized"], rep["contiguous"])
    held = 1 if sep and gain_max >= RUOSS_GAIN / 2 else 0.5 if sep and gain_max > 0 else 0
    sep_pairs = [(t, e) for t, e in pairs if separated(groups[(t, e, "randomized")]["stats"], groups[(t, e, "contiguous")]["stats"])]
    return {"pairs": pairs, "gain_max": gain_max, "gain_mean": gain_mean, "rep": rep, "sep": sep, "held": held,
            "sep_pairs": sep_pairs}


def status_of(g):
    """A contiguous group that passes the gate: generalizes (seeds' OOD mean − std ≥ the gate's bar beyond L), fails
    (even the max below it), unclear (seeds) between."""
    bar = c.gate_threshold(g["chance"])
    m, sd, n = g["stats"]
    return "generalizes" if n >= 2 and m - sd >= bar else "fails" if g["max"] < bar else "unclear (seeds)"


def levels(groups, tasks, encs):
    """Claim B against a control that can fail: with contiguous ids, the tasks with a pair that passes the gate, each
    scored by its competent pairs' mean scaled score ((score − chance) / (1 − chance), mean over seeds); the regular
    tasks above the non-regular ones by an exact permutation test over the tasks (p < ALPHA: task difficulty, not the
    seeds, is the noise here), and no non-regular pair generalizing. Not comparable (None) without a competent task
    on both sides."""
    ok = [(t, e) for t in tasks for e in encs if groups[(t, e, "contiguous")]["gate"] and groups[(t, e, "contiguous")]["max"] is not None]
    status = {k: status_of(groups[(k[0], k[1], "contiguous")]) for k in ok}
    scaled = {}
    for t, e in ok:
        g = groups[(t, e, "contiguous")]
        ch = g["chance"] or 0.0
        scaled.setdefault(t, []).append((g["stats"][0] - ch) / (1 - ch))
    task_score = {t: sum(v) / len(v) for t, v in scaled.items()}
    reg = [t for t in task_score if LEVEL.get(t, "CS") == "R"]
    nonreg = [t for t in task_score if LEVEL.get(t, "CS") != "R"]
    out = {"status": status, "reg": [k for k in ok if k[0] in reg], "nonreg": [k for k in ok if k[0] in nonreg],
           "task_score": task_score, "reg_tasks": reg, "nonreg_tasks": nonreg, "held": None}
    if not reg or not nonreg:
        return out
    out["p"] = permutation_p([task_score[t] for t in reg], [task_score[t] for t in nonreg])
    out["gen"] = [k for k in out["nonreg"] if status[k] == "generalizes"]
    out["held"] = 1 if out["p"] < ALPHA and not out["gen"] else 0
    return out


def judge(t, ctx):
    tasks, encs = t.key_values("task.name"), t.key_values("encoding.name")
    groups = groups_of(t)
    a, b = gain(groups, tasks, encs), levels(groups, tasks, encs)
    judged = [h for h in (None if a is None else a["held"], b["held"]) if h is not None]
    numbers = {}
    if a is not None:
        numbers["A: gain of the max (points)"] = 100 * a["gain_max"]
        numbers["A: per seed, randomized − contiguous pairs' average (points)"] = 100 * (a["rep"]["randomized"][0] - a["rep"]["contiguous"][0])
    if b["held"] is not None and b.get("reg_tasks") and b.get("nonreg_tasks"):
        ts = b["task_score"]
        numbers["B: regular − non-regular tasks' mean scaled score (points)"] = 100 * (
            sum(ts[x] for x in b["reg_tasks"]) / len(b["reg_tasks"]) - sum(ts[x] for x in b["nonreg_tasks"]) / len(b["nonreg_tasks"]))
    return {"word": c.NOT_COMPARABLE if not judged else c.verdict_word(sum(judged), 2), "groups": groups, "a": a, "b": b,
            "tasks": tasks, "encs": encs, "judged": len(judged), "numbers": numbers,
            "ind": max(t.lengths(True)), "ood": t.lengths(False)}
