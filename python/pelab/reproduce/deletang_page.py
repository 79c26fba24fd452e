"""The deletang page over deletang.py's rules."""
from . import common as c
from .deletang import LEVEL, MODES
from .stats import ALPHA, separated

MISSING = ("not found in a stored primary source (the per-task tables, Delétang et al.'s Table 2 and Ruoss et "
           "al.'s Table 1, could not be read from the papers here), so not cited")
NO_MAIN_PLOT = ("The report's main plot (one curve per task × encoding × positions, 150 of them) is not copied here; "
                "`report.html` in the run directory has one plot per group (`plots/beyond_*.png`).")


def table_text(f):
    """Per task × encoding: the gate for both position modes and the OOD token accuracy (max, mean ± std over runs)."""
    fmt = lambda g: ("n/a" if g["max"] is None else f"{c.pct(g['max'])} / {c.pct(g['stats'][0])}"
                     + ("" if g["stats"][1] is None else f" ± {c.pct(g['stats'][1])}") + f" ({g['stats'][2]})")
    body, groups, ood = [], f["groups"], f["ood"]
    for t in f["tasks"]:
        for e in f["encs"]:
            cg, r = groups[(t, e, "contiguous")], groups[(t, e, "randomized")]
            both = cg["gate"] and r["gate"] and cg["max"] is not None and r["max"] is not None
            state = ("not comparable (gate)" if not both else "gain" if separated(r["stats"], cg["stats"])
                     else "loss" if separated(cg["stats"], r["stats"]) else "tie (seeds)")
            body.append([t, LEVEL.get(t, "CS"), e, c.mean_std(cg["cell"]) + ("" if cg["gate"] else " ✗"),
                         c.mean_std(r["cell"]) + ("" if r["gate"] else " ✗"), c.pct(cg["thr"] or r["thr"]), fmt(cg), fmt(r),
                         "n/a" if not both else f"{100 * (r['max'] - cg['max']):+.1f}", state])
    return (f"Token accuracy (%). In distribution: size {f['ind']}, the group's learning rate's mean ± sample std over seeds "
            "(✗ = fails the competence gate, whose threshold is the next column). Beyond training: each run's (seed × "
            f"learning rate) token accuracy averaged over sizes {ood[0]}–{ood[-1]}, shown as the max over every run judged (the "
            "papers' aggregation; under [protocol] select the runs of the selected learning rate, and the max over every "
            "learning rate is in the protocol section's grid) / the mean ± sample std over the seeds of the group's "
            "learning rate (seeds). The group's learning rate: the one [protocol] select chose on the validation split, "
            "else the best in-distribution mean. Gain = "
            "randomized − contiguous of the max, in points; the last column applies the tie rule to the seeds' scores:\n\n"
            + c.md_table(["task", "level", "encoding", "in-dist contiguous", "in-dist randomized", "gate: needs ≥",
                          "OOD contiguous: max / mean", "OOD randomized: max / mean", "gain (max, points)", "seeds"], body))


def claim_a_text(a, tasks):
    if a is None:
        return "not comparable: no (task, encoding) pair passes the gate in both position modes"
    rr, rc = a["rep"]["randomized"], a["rep"]["contiguous"]
    sd = lambda s: "" if s[1] is None else f" ± {100 * s[1]:.1f}"
    on = list(dict.fromkeys(t for t, _ in a["pairs"]))
    return (f"gain of the max {100 * a['gain_max']:+.1f} points (of the mean {100 * a['gain_mean']:+.1f}) over "
            f"{len(a['pairs'])} pair(s) on {len(on)} of {len(tasks)} tasks ({', '.join(on)}); per seed, the pairs' average "
            f"is {c.pct(rr[0])}{sd(rr)} randomized against {c.pct(rc[0])}{sd(rc)} contiguous ({rr[2]} seeds): "
            + ("separated" if a["sep"] else "a tie (seeds)") + f"; {len(a['sep_pairs'])} pair(s) with a gain the seeds separate")


def claim_b_text(b):
    st = b["status"]
    listing = lambda ks: ", ".join(f"{t} × {e} {st[(t, e)]}" for t, e in ks) or "none"
    head = (f"with contiguous ids, {len(b['reg'])} regular and {len(b['nonreg'])} non-regular task × encoding pair(s) pass "
            f"the gate (regular: {listing(b['reg'])}; non-regular: {listing(b['nonreg'])})")
    if b["held"] is None:
        return head + "; not comparable: the control needs a competent task on both sides"
    ts = b["task_score"]
    score = lambda ks: ", ".join(f"{k} {100 * ts[k]:.1f}" for k in ks)
    return (head + f"; scaled score per task (0 = chance, 100 = every token right; mean over its competent pairs): "
            f"regular {score(b['reg_tasks'])}, non-regular {score(b['nonreg_tasks'])}; regular above non-regular with "
            f"permutation p = {b['p']:.3f} over the tasks (needs < {ALPHA:g})"
            + (f"; non-regular pairs that generalize: {', '.join(f'{t} × {e}' for t, e in b['gen'])}" if b["gen"] else ""))


def control_text(groups, tasks):
    ctrl = [groups[(t, "none", p)]["max"] for t in tasks for p in MODES if (t, "none", p) in groups]
    if not ctrl or None in ctrl:
        return "n/a"
    diffs = [groups[(t, "none", "randomized")]["max"] - groups[(t, "none", "contiguous")]["max"] for t in tasks]
    return f"randomized − contiguous of the max {100 * sum(diffs) / len(diffs):+.1f} points on average over {len(tasks)} tasks"


def render(t, ctx, f):
    a, b = claim_a_text(f["a"], f["tasks"]), claim_b_text(f["b"])
    ind, ood, skipped = f["ind"], f["ood"], 2 - f["judged"]
    verdict = (f"Delétang et al.'s and Ruoss et al.'s length-generalization claims on the Chomsky-hierarchy suite, at toy "
               f"scale (trained on sizes 1..{ind}, tested on {ood[0]}..{ood[-1]}; the papers: 1..40 and 41..500): "
               f"{ctx['word'].removeprefix('is ')}; (A) randomized positions raise the OOD token accuracy: {a}; (B) "
               f"non-regular tasks fail where regular ones succeed: {b}"
               + (f"; {skipped} claim(s) not comparable (the competence gate)" if skipped else "") + ".")
    comparison = c.md_table(
        ["claim", "the papers", f"pelab (token accuracy, sizes {ood[0]}–{ood[-1]})"],
        [["(A) randomized − contiguous beyond the training length, averaged over tasks and encodings",
          "+12.0 points (Ruoss et al. 2023, abstract; 6000 models, 15 tasks, accuracy over sizes 41–500)", a],
         ["(B) transformers fail on non-regular tasks", "\"RNNs and Transformers fail to generalize on non-regular tasks\" "
          "(Delétang et al. 2023, abstract; 20 910 models, 15 tasks)", b],
         ["per task and encoding (Delétang et al. Table 2, Ruoss et al. Table 1)", MISSING, "the table below"],
         ["NoPE control (reads no ids)", "—", control_text(f["groups"], f["tasks"])]])
    checks = c.checks_text(
        f"every task × encoding × positions group: {c.GATE_ACC_TEXT}; metric token accuracy at size {ind}, the group's "
        "learning rate's mean over seeds (the protocol section says how it is chosen). A pair enters claim A only when both of its groups pass; claim B reads only "
        "the contiguous groups that pass.",
        c.TIE_TEXT + " (score: a seed's token accuracy averaged over the sizes beyond training, at the group's "
                     "learning rate). Claim A holds when, per seed, the comparable pairs' average is separated above with "
                     "randomized ids and the gain of the max is ≥ +6.0 points (half the paper's +12.0; a separated smaller "
                     "positive gain counts half). Claim B holds when, with contiguous ids, the tasks with a competent pair, "
                     "each scored by its competent pairs' mean scaled score ((score − chance) / (1 − chance)), put the "
                     "regular tasks above the non-regular ones by an exact permutation test over the tasks (p < 0.05; "
                     "task difficulty, not the seeds, is the noise a label on a task must beat) and no non-regular pair generalizes (seeds' mean − std ≥ chance + 0.8 × (1 − "
                     "chance) beyond training); it is not comparable without a competent task on both sides (the "
                     "earlier rule, 'no non-regular pair generalizes' alone, held for most random results). Reproduces: "
                     "both hold; partly: one, or halves; does not reproduce: neither (a claim not comparable counts as "
                     "not held); not comparable: neither claim has groups that pass the gate.",
        c.budget_policy(ctx["config"], ctx["quick"]))
    return verdict, comparison, table_text(f), checks
