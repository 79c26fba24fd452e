"""The page's "Protocol and budget" section: the recipe's protocol and budget (its header's `# reproduce.protocol:`
and `# reproduce.budget:` lines, and [protocol] / [train] budget of its config), the steps each run used, the grid of
[protocol] select with the selected value and the papers' aggregation beside it, and per seed the held-out curve at
the training length over training (issue #44, items 1-3)."""
from . import common as c
from . import protocol as pr


def headline(t):
    """The metric the grid and the curves show: exact match, else token accuracy, else the loss."""
    have = {m for (_, m, _) in t.vals}
    return next((m for m in pr.CURVE_METRICS if m in have), None)


def steps_text(runs):
    if runs is None:
        return ("not recorded: these results predate the per-run record (2026-11-28); each run trained as the budget "
                "policy says")
    steps = sorted(r["steps"] for r in runs if r["steps"] is not None)
    if not steps:
        return "no run recorded its steps"
    early = sum(1 for r in runs if r["status"] == "early_stopped")
    return (f"median {steps[len(steps) // 2]}, {steps[0]}..{steps[-1]} over {len(steps)} run(s); {early} stopped before "
            "the cap (per run: the curves below)")


def fmt(m, x):
    return "n/a" if x is None else (f"{x:.3f}" if m in pr.LOWER_IS_BETTER else f"{100 * x:.1f}")


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def grid_table(t, runs, chosen):
    """Every value of the selected keys per group: validation, in-distribution test, beyond training; the selection
    and the papers' aggregation (best beyond training) marked."""
    m, sel = headline(t), pr.select(runs, t.keys, chosen)
    ind, ood = max(t.lengths(True), default=None), t.lengths(False)
    body = []
    for g, s in sel.items():
        ood_means = {}
        for ch, v, n, missing, vm in s["rows"]:
            full = [None] * len(t.keys)
            for k, x in zip([k for k in t.keys if k not in chosen], g):
                full[t.keys.index(k)] = x
            for k, x in zip([k for k in t.keys if k in chosen], ch):
                full[t.keys.index(k)] = x
            full = tuple(full)
            cell = lambda L: mean(t.vals.get((full, m, L), {}).values())
            ood_means[ch] = mean([cell(L) for L in ood])
            body.append([", ".join(g) or "(all)", ", ".join(ch), f"{vm} {fmt(vm, v)} ({n}"
                         + (f", {missing} missing)" if missing else ")"), fmt(m, cell(ind)), fmt(m, ood_means[ch]), ch])
        lower = m in pr.LOWER_IS_BETTER
        best = min if lower else max
        paper = best((x for x in ood_means.items() if x[1] is not None), key=lambda x: x[1], default=(None, None))[0]
        for row in body[-len(s["rows"]):]:
            ch = row.pop()
            row.append(("**selected** (validation)" if ch == s["selected"] else "")
                       + (" best beyond training (the papers' aggregation, not the selection)" if ch == paper else ""))
    return (f"The grid of `[protocol] select = {', '.join(chosen)}` ({m}; % for accuracies, mean over seeds): the "
            "value each group's tables use is the one with the best validation mean (an in-distribution split drawn "
            "apart from the test set; never a length beyond training). The papers' aggregation, the best value on "
            "the lengths beyond training, is marked for comparison only.\n\n"
            + c.md_table(["group", "value", "validation (seeds)", f"test at {ind} (in dist.)", "beyond training", ""],
                         body))


def curves(runs, m):
    """Per run: its steps, status and held-out curve of metric m at the training length, in a collapsed section."""
    rows = [[", ".join(map(str, r["group"])) or "(all)", r["seed"], r["steps"], r["status"],
             ", ".join(f"{s} {fmt(m, v)}" for s, v in r["curves"].get(m, []))] for r in runs]
    if not rows:
        return ""
    return (f"<details><summary>Held-out {m} at the training length over training, per seed (step value, % for "
            "accuracies; a run that never rises did not learn)</summary>\n\n"
            + c.md_table(["group", "seed", "steps used", "status", f"{m} at each evaluation"], rows) + "\n\n</details>")


def section(t, runs, config, quick):
    """The markdown of the section (t: the full Table, before the selection)."""
    chosen = pr.selected_keys(config)
    proto = c.load_config(config).get("protocol", {})
    if chosen:
        what = (f"`[protocol] select = \"{proto.get('select')}\"`: per group, the value of {', '.join(chosen)} with the "
                f"best mean {proto.get('metric') or 'headline metric'} over seeds on the in-distribution validation split")
    else:
        what = "no selection: every setting is the recipe's own (one value per group)"
    lines = [f"- **Protocol**: {c.header_line(config, 'protocol') or what}",
             f"- **Budget policy**: {c.budget_policy(config, quick)}",
             f"- **Budget**: {c.header_line(config, 'budget') or 'not stated'} (the measured CPU time is in the "
             "provenance above)",
             f"- **Steps used**: {steps_text(runs)}"]
    out = "\n".join(lines)
    if chosen and runs:
        out += "\n\n" + grid_table(t, runs, chosen)
    if runs:
        out += "\n\n" + curves(runs, headline(t))
    return out
