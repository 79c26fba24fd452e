"""The protocol of a recipe's sweep, per run and per group: the steps each run used (its budget policy), its value on
the in-distribution validation split (RUN/validation.json, written when the config has [protocol] select or
[train] budget = "competent") and its held-out curve at the training length over training (metrics.jsonl); the
selection of [protocol] select on that split (the rule of experiments/run/selection.hpp, applied here to the
committed results: tests/scripts/test_reproduce_protocol.py checks that both pick the same); the papers' "best over
the grid on the test lengths", shown beside it as an aggregation, never used as the selection. Kept beside a page
as STEM.runs.csv. Standard library only."""
import csv
import json
import os

from . import common as c
from .table import PageError, Table

LOWER_IS_BETTER = {"loss"}  # training/metrics/*.cpp: Better::lower
CURVE_METRICS = ("exact_match", "token_acc", "loss")  # the curves kept; the page shows its tables' metric
FIELDS = ("seed", "cell", "steps", "status", "validation_metric", "validation", "curves")


def selected_keys(config):
    """[protocol] select split at its commas ([] when off), as pelab's selected_keys."""
    text = c.load_config(config).get("protocol", {}).get("select", "")
    return list(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))


def curve_of(run_dir, train_len):
    """{metric: [(step, value)]} of the run's held-out records at train_len (split eval), the last per step, for each
    of CURVE_METRICS the records have."""
    path = os.path.join(run_dir, "metrics.jsonl")
    points = {}
    if not os.path.isfile(path):
        return {}
    for line in open(path):
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue  # a record cut by a crash: metrics.jsonl is append-only
        if r.get("split") != "eval" or r.get("length") != train_len:
            continue
        for m in CURVE_METRICS:
            if isinstance(r.get(m), (int, float)):
                points.setdefault(m, {})[int(r["step"])] = float(r[m])
    return {m: sorted(p.items()) for m, p in points.items()}


def curve_text(curves):
    """The runs CSV's curve field: "token_acc 10:0.2 20:0.5|loss 10:2.3 20:1.9"."""
    return "|".join(m + " " + " ".join(f"{s}:{v!r}" for s, v in c) for m, c in curves.items())


def curve_parse(text):
    out = {}
    for part in filter(None, text.split("|")):
        m, *points = part.split(" ")
        out[m] = [(int(s), float(v)) for s, v in (p.split(":") for p in points)]
    return out


def read_run(run_dir):
    """One run directory's protocol record (None without eval.json)."""
    p = os.path.join(run_dir, "eval.json")
    if not os.path.isfile(p):
        return None
    try:
        j = json.load(open(p))
        v = json.load(open(os.path.join(run_dir, "validation.json"))) if os.path.isfile(
            os.path.join(run_dir, "validation.json")) else {}
    except (OSError, json.JSONDecodeError) as e:
        raise PageError(f"{run_dir}: {e}")
    return {"cell": j.get("cell"), "steps": j.get("steps"), "status": j.get("status", ""),
            "validation_metric": v.get("metric", ""), "validation": v.get("value"),
            "curves": curve_of(run_dir, j.get("train_len"))}


def read_runs(run_dir, t, arms):
    """Per run of the sweep (each arm's), in grid order: its group (the Table's keys), seed and protocol record."""
    out = []
    for arm in arms or [None]:
        d = os.path.join(run_dir, arm) if arm else run_dir
        path = os.path.join(d, "results.csv")
        seen = {}
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            keys = reader.fieldnames[1:reader.fieldnames.index("seed")]
            for r in reader:
                seen.setdefault(r["run"], ([arm] if arm else []) + [r[k] for k in keys] + [int(r["seed"])])
        runs = []
        for rel, g in seen.items():
            rec = read_run(os.path.join(d, rel))
            if rec is not None:
                runs.append(dict(rec, group=tuple(g[:-1]), seed=g[-1]))
        out += sorted(runs, key=lambda r: (r["cell"] is None, r["cell"] or 0))
    return out


def write_runs(runs, keys, path):
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(keys) + list(FIELDS))
        for r in runs:
            w.writerow(list(r["group"]) + [r["seed"], "" if r["cell"] is None else r["cell"], r["steps"], r["status"],
                                           r["validation_metric"], "" if r["validation"] is None else repr(r["validation"]),
                                           curve_text(r["curves"])])
    os.replace(path + ".tmp", path)


def read_runs_csv(path, keys):
    """STEM.runs.csv back into runs; None when the page's results predate it."""
    if not os.path.isfile(path):
        return None
    out = []
    with open(path, newline="") as f:
        for i, r in enumerate(csv.DictReader(f), start=2):
            try:
                out.append({"group": tuple(r[k] for k in keys), "seed": int(r["seed"]),
                            "cell": int(r["cell"]) if r["cell"] else None, "steps": int(r["steps"]),
                            "status": r["status"], "validation_metric": r["validation_metric"],
                            "validation": float(r["validation"]) if r["validation"] else None,
                            "curves": curve_parse(r["curves"])})
            except (KeyError, ValueError) as e:
                raise PageError(f"{path}:{i}: {e}")
    return out


def split_group(keys, group, chosen):
    """(the group without the selected keys, the selected keys' values) of one Table group."""
    rest = tuple(v for k, v in zip(keys, group) if k not in chosen)
    return rest, tuple(v for k, v in zip(keys, group) if k in chosen)


def select(runs, keys, chosen):
    """{group without the selected keys: {"rows": [(choice, mean, n, missing, metric)], "selected": choice}}: per
    group, the choice with the best mean validation value over its seeds (highest, lowest for a loss); a tie keeps
    the first in grid order; a choice with a run lacking a value is never chosen."""
    rows = {}
    for r in runs:
        g, ch = split_group(keys, r["group"], chosen)
        vals = rows.setdefault(g, {}).setdefault(ch, {"v": [], "missing": 0, "metric": r["validation_metric"]})
        if r["validation"] is None:
            vals["missing"] += 1
        else:
            vals["v"].append(r["validation"])
    out = {}
    for g, choices in rows.items():
        best, table = None, []
        for ch, x in choices.items():
            mean = sum(x["v"]) / len(x["v"]) if x["v"] else None
            table.append((ch, mean, len(x["v"]), x["missing"], x["metric"]))
            lower = x["metric"] in LOWER_IS_BETTER
            if x["missing"] == 0 and mean is not None and (
                    best is None or (mean < best[1] if lower else mean > best[1])):
                best = (ch, mean)
        out[g] = {"rows": table, "selected": best and best[0]}
    return out


def apply(t, runs, chosen):
    """The Table restricted to each group's selected choice, the selected keys dropped from its groups: what the rules
    judge under the protocol. A group without a selection (no validation values) is left out."""
    sel = select(runs, t.keys, chosen)
    out = Table([k for k in t.keys if k not in chosen])
    for (g, m, L), v in t.vals.items():
        rest, ch = split_group(t.keys, g, chosen)
        if rest in sel and sel[rest]["selected"] == ch:
            for s, x in v.items():
                out.add(rest, s, m, L, x, t.chance.get((g, m, L)), t.ind[L])
    if not out.groups:
        raise PageError("[protocol] select: no group has a selection (no run has a validation value: its sweep ran "
                        "before the protocol features, or without [protocol] select)")
    return out
