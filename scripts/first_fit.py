#!/usr/bin/env python3
"""Both budget policies from one fixed-budget sweep: each run's accuracy beyond the training length at
its first fit, read from its curve, beside the same at the end of its budget.

A first-fit run stops at its first held-out evaluation (every [train] eval_every steps) whose metric at
the training length reaches the target. With the same config and seed, the fixed-budget run holds the
same model at that step (the schedule depends on [train] steps, not on where a run stops), and
metrics.jsonl's "beyond" records ([eval] beyond_samples, 64 by default) evaluate it at every length past
the training length, on the first examples of the final evaluation's held-out sets. So the first-fit
figure of a run is the mean over those lengths at that step; a run that never reaches the target is
the model at the step cap, whose eval.json "ood" is used. Groups are the sweep's cells without the seed.

  scripts/first_fit.py RUN_DIR [--metric token_acc] [--target 0.99]

Prints a markdown table per group: runs that fit, the mean step of the fit, the metric at the training
length and beyond (mean over the eval lengths above it) at first fit, mean +- sample std over the seeds
with min and max, then the same at the end of the budget (eval.json). Exit 2 on bad input.
"""
import argparse
import json
import math
import os
import sys


def fail(msg):
    print(f"first_fit.py: {msg}", file=sys.stderr)
    sys.exit(2)


def read_cell(path):
    """The group label (the assignment without the seed) from a cell's cell.toml [cell.assignment]."""
    assignment, inside = {}, False
    with open(os.path.join(path, "cell.toml")) as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                inside = line == "[cell.assignment]"
            elif inside and "=" in line:
                k, v = (s.strip() for s in line.split("=", 1))
                assignment[k.strip('"')] = v.strip('"')
    assignment.pop("train.seed", None)
    return ", ".join(f"{k}={v}" for k, v in sorted(assignment.items())) or "all"


def first_fit(path, metric, target):
    """((fit step or None, metric at the training length, metric beyond) at first fit, metric beyond at the
    budget's end) of one run."""
    with open(os.path.join(path, "eval.json")) as f:
        ev = json.load(f)
    train_len, end = ev["train_len"], ev["ood"][metric]
    with open(os.path.join(path, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    for r in records:
        if r["split"] != "eval" or r["length"] != train_len or r.get(metric) is None or r[metric] < target:
            continue
        if not r.get("beyond"):
            if r["step"] == ev["steps"]:  # the fit is the last step: the final evaluation is the first fit
                return (r["step"], r[metric], end), end
            fail(f"{path}: step {r['step']} has no 'beyond' records ([eval] beyond_samples = 0, or an older run)")
        beyond = [b[metric] for b in r["beyond"] if b.get("samples") and b.get(metric) is not None]
        return (r["step"], r[metric], sum(beyond) / len(beyond) if beyond else math.nan), end
    at = {row["length"]: row for row in ev["results"]}
    return (None, at.get(train_len, {}).get(metric, math.nan), end), end


def stats(xs):
    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return "n/a", "n/a", "n/a"
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return f"{100 * m:.1f} ± {100 * sd:.1f} ({len(xs)})", f"{100 * min(xs):.1f}", f"{100 * max(xs):.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--metric", default="token_acc")
    ap.add_argument("--target", type=float, default=0.99)
    a = ap.parse_args()
    if not os.path.isdir(a.run_dir):
        fail(f"{a.run_dir}: not a directory (expected a sweep's output directory)")
    if not 0 < a.target <= 1:
        fail(f"--target {a.target}: expected a fraction in (0, 1]")
    groups = {}
    for name in sorted(os.listdir(a.run_dir)):
        cell = os.path.join(a.run_dir, name)
        if not os.path.isfile(os.path.join(cell, "eval.json")):
            continue
        groups.setdefault(read_cell(cell), []).append(first_fit(cell, a.metric, a.target))
    if not groups:
        fail(f"{a.run_dir}: no finished run (a cell directory with eval.json)")
    print(f"First fit (first held-out evaluation with {a.metric} >= {100 * a.target:g}% at the training length; "
          f"beyond: the run's 'beyond' records at that step) against the end of the budget (eval.json 'ood'); "
          f"metric {a.metric} (%), mean ± std over seeds (n), min, max. Runs: {a.run_dir}\n")
    print("| group | fit | mean step | at train len, first fit | beyond, first fit | min | max | beyond, budget end | min | max |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, runs in groups.items():
        fits = [r for (r, _) in runs if r[0] is not None]
        step = f"{sum(r[0] for r in fits) / len(fits):.0f}" if fits else "-"
        inside = stats([r[1] for (r, _) in runs])[0]
        beyond = stats([r[2] for (r, _) in runs])
        end = stats([e for (_, e) in runs])
        print(f"| {label} | {len(fits)}/{len(runs)} | {step} | {inside} | {' | '.join(beyond)} | {' | '.join(end)} |")


if __name__ == "__main__":
    main()
