"""A gated comparison table of one or more sweeps, for the results pages (docs/results.md): per group, the
in-distribution score against the competence gate (the pages' gate, common.gate_threshold), how many seeds pass
it, the score at each evaluated length, and the score beyond the training length with the tie rule's order
(stats.tie_ranks) among the groups that pass the gate only. Reads each run's eval.json, or a named evaluation
(`pelab eval RUN --name NAME` -> eval-NAME.json). Standard library only.

    python3 -m pelab.reproduce.gated runs/dyck [LABEL=DIR ...] [--metric token_acc] [--eval NAME] [--error]
                                          [--lengths 10,20,30]
"""
import argparse
import json
import os
import sys

from . import common as c
from . import stats
from .sweep import eval_jsons
from .table import PageError


def group_label(assignment):
    """The group of a run: its swept values but the seed, e.g. 'rope' or 'a4, rope'."""
    vals = [str(v) for k, v in assignment.items() if k != "train.seed"]
    return ", ".join(vals) if vals else "(one group)"


def read_dir(label, path, eval_name, metric):
    """{group label: {"seeds": {seed: {length: value}}, "chance": {length: c}, "ind": {length: bool}, "cpu_s": s,
    "steps": [...], "cell": the group's first grid index}}."""
    out = {}
    for _, j in eval_jsons(path, f"eval-{eval_name}.json" if eval_name else "eval.json"):
        a = j.get("assignment", {})
        g = group_label(a)
        g = (label if g == "(one group)" else f"{label}: {g}") if label else g
        e = out.setdefault(g, {"seeds": {}, "chance": {}, "ind": {}, "cpu_s": 0.0, "steps": [], "cell": j.get("cell", 0)})
        e["cell"] = min(e["cell"], j.get("cell", 0))  # the grid's order, not the directory names'
        e["cpu_s"] += float(j.get("train_seconds", 0) or 0) + float(j.get("eval_seconds", 0) or 0)
        e["steps"].append(int(j.get("steps", 0) or 0))
        row = e["seeds"].setdefault(int(a.get("train.seed", j.get("seed", 0))), {})
        for r in j.get("results", []):
            if r.get("status", "ok") != "ok" or r.get(metric) is None:
                continue
            L = int(r["length"])
            row[L] = float(r[metric])
            e["chance"][L] = (r.get("chance") or {}).get(metric)
            e["ind"][L] = bool(r.get("in_distribution"))
    return dict(sorted(out.items(), key=lambda kv: kv[1]["cell"]))


def summarize(groups, gates=None):
    """Per group: gate length, threshold, in-distribution cell, seeds passing, per-length cells, beyond scores.
    gates: the groups the gate is judged on when they are not `groups` (a named evaluation at another task
    setting is scored, but competence is the training setting's: eval.json)."""
    rows = {}
    for g, e in groups.items():
        ood = sorted(L for L, v in e["ind"].items() if not v)
        ge = (gates or groups).get(g, {"ind": {}, "chance": {}, "seeds": {}})
        gind = sorted(L for L, v in ge["ind"].items() if v)
        gl = gind[-1] if gind else None
        thr = c.gate_threshold(ge["chance"].get(gl)) if gl is not None else None
        at_gate = [s[gl] for s in ge["seeds"].values() if gl in s]
        beyond = [sum(s[L] for L in ood) / len(ood) for s in e["seeds"].values() if ood and all(L in s for L in ood)]
        m = stats.mean_sd(at_gate)
        rows[g] = {"gate_len": gl, "threshold": thr, "in": m, "passing": sum(v >= thr for v in at_gate) if thr else 0,
                   "passes": m[0] is not None and thr is not None and m[0] >= thr, "beyond": stats.mean_sd(beyond),
                   "beyond_vals": beyond, "per_len": {L: stats.mean_sd([s[L] for s in e["seeds"].values() if L in s])
                                                     for L in sorted(e["ind"])}, "cpu_s": e["cpu_s"],
                   "steps": e["steps"]}
    return rows


def fmt(m, error):
    """'mean ± sd (n)' in percent (or 100 - it, an error rate)."""
    mean, sd, n = m
    if mean is None:
        return "n/a"
    v = 100 * (1 - mean) if error else 100 * mean
    return f"{v:.1f}" + (f" ± {100 * sd:.1f}" if sd is not None else "") + f" ({n})"


def steps_text(steps):
    """The steps the group's runs trained: one number, or min–max (a budget that stops early)."""
    if not steps:
        return "n/a"
    return str(steps[0]) if min(steps) == max(steps) else f"{min(steps)}–{max(steps)}"


def table(rows, error=False, show=None):
    """The markdown table; ranks among the gated groups by the tie rule on the beyond-training score."""
    passed = {g: r["beyond"] for g, r in rows.items() if r["passes"] and r["beyond"][0] is not None}
    ranks, _ = stats.tie_ranks(passed) if passed else ({}, [])
    lens = sorted({L for r in rows.values() for L in r["per_len"] if show is None or L in show})
    ind = {L for r in rows.values() for L in r["per_len"] if r["gate_len"] is not None and L <= r["gate_len"]}
    word = "error rate" if error else "score"
    head = ["group", "gate (error ≤)" if error else "gate (≥)", "seeds past the gate"] + [f"{L}{'*' if L in ind else ''}" for L in lens] + \
        [f"beyond: {word} [min–max]", "rank (ties: average)", "steps"]
    body = []
    for g, r in rows.items():
        thr = "n/a" if r["threshold"] is None else f"{100 * (1 - r['threshold']) if error else 100 * r['threshold']:.1f}"
        vals = r["beyond_vals"]
        lo, hi = (min(vals), max(vals)) if vals else (None, None)
        if error and vals:
            lo, hi = 1 - hi, 1 - lo
        span = f" [{100 * lo:.1f}–{100 * hi:.1f}]" if vals else ""
        rank = f"{ranks[g]:g}" if g in ranks else ("not read (gate)" if not r["passes"] else "n/a")
        body.append([g, ("≤ " if error else "") + thr, f"{r['passing']}/{r['in'][2]}"] +
                    [fmt(r["per_len"].get(L, (None, None, 0)), error) for L in lens] + [fmt(r["beyond"], error) + span, rank, steps_text(r["steps"])])
    return c.md_table(head, body)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m pelab.reproduce.gated", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", help="sweep directories, each DIR or LABEL=DIR")
    p.add_argument("--metric", default="token_acc", help="token_acc | exact_match (default token_acc)")
    p.add_argument("--eval", default="", help="score the named evaluation eval-NAME.json instead of eval.json (the "
                   "gate stays eval.json's: competence is judged at the training's task setting)")
    p.add_argument("--error", action="store_true", help="print 100 - the score (an error rate, e.g. flip-flop's)")
    p.add_argument("--lengths", default="", help="the lengths shown as columns, e.g. 10,20,30 (default: every one; "
                   "the beyond score always averages every evaluated length past training)")
    a = p.parse_args(argv)
    try:
        show = {int(x) for x in a.lengths.split(",") if x.strip()} or None
    except ValueError:
        print(f"gated: --lengths {a.lengths!r}: not a comma-separated list of integers", file=sys.stderr)
        return 2
    groups, gates = {}, {}
    for item in a.dirs:
        label, _, path = item.rpartition("=") if "=" in item and not os.path.isdir(item) else ("", "", item)
        if not os.path.isdir(path):
            print(f"gated: {path}: not a directory", file=sys.stderr)
            return 2
        try:
            got = read_dir(label, path, a.eval, a.metric)
            if a.eval:
                gates.update(read_dir(label, path, "", a.metric))
        except PageError as e:
            print(f"gated: {e}", file=sys.stderr)
            return 2
        if not got:
            print(f"gated: {path}: no run with {'eval-' + a.eval if a.eval else 'eval'}.json and {a.metric}", file=sys.stderr)
            return 2
        groups.update(got)
    rows = summarize(groups, gates if a.eval else None)
    print(table(rows, a.error, show))
    cpu = sum(r["cpu_s"] for r in rows.values())
    print(f"\n{a.metric}{' as an error rate' if a.error else ''}, %; * = in distribution; gate = chance + "
          f"{c.GATE_FRACTION:g} (1 − chance) at the largest in-distribution length; beyond = each seed's mean over the "
          f"lengths past training, mean ± sample std (seeds); ranks by the tie rule among groups passing the gate; "
          f"the runs took {cpu / 60:.1f} minutes (eval.json's train and eval seconds: wall clock, one thread each; CPU "
          "time when the machine was not oversubscribed).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
