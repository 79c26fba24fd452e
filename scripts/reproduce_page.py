#!/usr/bin/env python3
"""reproduce_page.py NAME RUN_DIR: the result page of a reproduction recipe (scripts/reproduce.sh runs it).

Reads what `pelab sweep` + `pelab report` wrote into RUN_DIR (summary.csv, steps_to_target.csv, each run's
eval.json) and RUN_DIR/reproduce_times.txt (one line per reproduce.sh invocation: date, wall s, CPU s,
jobs, overrides), puts the paper's numbers (cited) beside pelab's and computes a one-sentence verdict:
reproduces / partly / not. The paper's setting and what is scaled down are quoted from the recipe
config's header. Standard library only; exit code 2 with a message on missing or malformed input.
"""
import argparse
import csv
import json
import math
import os
import shutil
import sys


class PageError(Exception):
    pass


# ---------------------------------------------------------------------------------------------- inputs

def read_summary(run_dir):
    """summary.csv -> list of rows: group values (by key), length, in_distribution, metric, mean, std, n, n_na, chance."""
    path = os.path.join(run_dir, "summary.csv")
    if not os.path.isfile(path):
        raise PageError(f"{path}: missing (run the recipe first)")
    rows = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"length", "in_distribution", "metric", "mean", "std", "n", "n_na", "chance"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise PageError(f"{path}: expected the columns {sorted(need)}, got {reader.fieldnames}")
        for i, r in enumerate(reader, start=2):
            try:
                r["length"] = int(r["length"])
                r["in_distribution"] = r["in_distribution"] == "true"
                for k in ("mean", "std", "chance"):
                    r[k] = float(r[k]) if r[k] != "" else None
                r["n"], r["n_na"] = int(r["n"]), int(r["n_na"])
            except ValueError as e:
                raise PageError(f"{path}:{i}: {e}")
            rows.append(r)
    if not rows:
        raise PageError(f"{path}: no rows")
    return rows


def cell(rows, metric, length, **group):
    """The summary row for one metric, length and group (group keys given with '.' as '_'), or None."""
    for r in rows:
        if r["metric"] == metric and r["length"] == length and all(r.get(k.replace("_", ".", 1)) == v for k, v in group.items()):
            return r
    return None


def lengths(rows, in_distribution=None):
    return sorted({r["length"] for r in rows if in_distribution is None or r["in_distribution"] == in_distribution})


def values_of(rows, key):
    out = []
    for r in rows:
        if r.get(key) is not None and r[key] not in out:
            out.append(r[key])
    return out


def read_steps(run_dir):
    path = os.path.join(run_dir, "steps_to_target.csv")
    if not os.path.isfile(path):
        raise PageError(f"{path}: missing")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_eval_jsons(run_dir):
    """[(assignment dict, results list)] of every run directory's eval.json."""
    out = []
    for d in sorted(os.listdir(run_dir)):
        p = os.path.join(run_dir, d, "eval.json")
        if os.path.isfile(p):
            with open(p) as f:
                try:
                    j = json.load(f)
                except json.JSONDecodeError as e:
                    raise PageError(f"{p}: {e}")
            out.append((j.get("assignment", {}), j.get("results", [])))
    if not out:
        raise PageError(f"{run_dir}: no run has an eval.json")
    return out


def read_times(run_dir):
    path = os.path.join(run_dir, "reproduce_times.txt")
    if not os.path.isfile(path):
        return None
    wall, cpu = 0.0, 0.0  # cpu None once an invocation did not record it ('-')
    lines = [ln.split() for ln in open(path) if ln.strip()]
    for i, p in enumerate(lines, start=1):
        try:
            wall += float(p[1])
            cpu = None if cpu is None or p[2] == "-" else cpu + float(p[2])
        except (IndexError, ValueError):
            raise PageError(f"{path}:{i}: expected 'DATE WALL_S CPU_S|- JOBS [OVERRIDES]'")
    return {"wall": wall, "cpu": cpu, "runs": len(lines), "jobs": lines[-1][3] if len(lines[-1]) > 3 else "?",
            "last": lines[-1][0]}


def config_header(config):
    """The recipe config's leading comment block, without the '# ' and the reproduce.quick line."""
    out = []
    for line in open(config):
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        if not text.startswith("reproduce.quick:"):
            out.append(text)
    return "\n".join(out).strip()


def quick_overrides(config):
    for line in open(config):
        if line.startswith("# reproduce.quick:"):
            return line.split(":", 1)[1].strip()
    return ""


# ---------------------------------------------------------------------------------------------- format

def pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}"


def mean_std(r):
    if r is None or r["mean"] is None:
        return "n/a"
    s = f"{100 * r['mean']:.1f}"
    if r["std"] is not None and r["n"] > 1:
        s += f" ± {100 * r['std']:.1f}"
    return s + f" ({r['n']})"


def md_table(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def verdict_word(held, total):
    """All claims hold -> reproduces, some (or partly) -> partly, none -> not (held may count halves)."""
    if held >= total:
        return "reproduces"
    if held > 0:
        return "partly reproduces"
    return "does not reproduce"


# ---------------------------------------------------------------------------------------------- recipes

def page_format(run_dir, rows):
    """NoPE format effect: BOS speeds learning, scored EOS lowers 2x accuracy, x SEP x above chance at 2x."""
    steps = read_steps(run_dir)
    train_len = min(lengths(rows, True))
    two_x = 2 * train_len
    if two_x not in lengths(rows):
        raise PageError(f"summary.csv has no length {two_x} (2x the training length {train_len})")

    def steps_of(bos, eos):  # mean steps to target; a run that never reached it counts at its last step
        v, reached = [], 0
        for r in steps:
            if r.get("task.bos") == bos and r.get("task.eos") == eos:
                if r["reached"] == "true":
                    v.append(float(r["steps_to_target"]))
                    reached += 1
                else:
                    v.append(float(r["steps"]))
        return (sum(v) / len(v) if v else None), reached, len(v)

    body, acc = [], {}
    for bos in ("true", "false"):
        for eos in ("scored", "absent"):
            s, reached, n = steps_of(bos, eos)
            c = cell(rows, "token_acc", two_x, task_bos=bos, task_eos=eos)
            acc[(bos, eos)] = c
            body.append([f"bos={bos}, eos={eos}", "n/a" if s is None else f"{s:.0f}" + ("" if reached == n else " (≥)"),
                         f"{reached}/{n}", mean_std(cell(rows, "token_acc", train_len, task_bos=bos, task_eos=eos)),
                         mean_std(c), pct(c["chance"] if c else None)])
    tables = ("Steps to 99% held-out token accuracy at the training length (mean over seeds; a run that never reached "
              "it counts at its last step, marked ≥) and token accuracy (%) at 1x and 2x:\n\n"
              + md_table(["format", "steps to 99%", "reached", f"token acc {train_len}", f"token acc {two_x} (2x)",
                          f"chance {two_x}"], body))

    claims, held = [], 0.0
    speed = []
    for eos in ("scored", "absent"):
        a, _, _ = steps_of("true", eos)
        b, _, _ = steps_of("false", eos)
        if a and b:
            speed.append(b / a)
    ratio = math.exp(sum(math.log(x) for x in speed) / len(speed)) if speed else None
    ok = ratio is not None and ratio >= 1.5
    half = ratio is not None and 1.1 < ratio < 1.5
    held += 1 if ok else 0.5 if half else 0
    claims.append(["BOS speeds learning", "~2x faster with <BOS>",
                   "n/a" if ratio is None else f"{ratio:.2f}x (geometric mean over eos settings)",
                   "holds" if ok else "weakly" if half else "no"])
    sc, ab = acc[("true", "scored")], acc[("true", "absent")]
    drop = None if not sc or not ab or sc["mean"] is None or ab["mean"] is None else ab["mean"] - sc["mean"]
    ok = drop is not None and drop >= 0.2
    half = drop is not None and 0.05 < drop < 0.2
    held += 1 if ok else 0.5 if half else 0
    claims.append(["scored EOS (with BOS) lowers 2x token accuracy", "0.63–0.68 → 0.20–0.22 (d=128)",
                   "n/a" if drop is None else f"{ab['mean']:.2f} → {sc['mean']:.2f}",
                   "holds" if ok else "weakly" if half else "no"])
    xs = acc[("false", "absent")]
    margin = None if not xs or xs["mean"] is None or xs["chance"] is None else xs["mean"] - xs["chance"]
    ok = margin is not None and margin >= 0.05
    held += 1 if ok else 0
    claims.append(["`x SEP x` (no BOS, no EOS): NoPE above chance at 2x", "above chance",
                   "n/a" if margin is None else f"{xs['mean']:.2f} vs chance {xs['chance']:.2f}",
                   "holds" if ok else "no"])
    word = verdict_word(held, 3)
    verdict = (f"The NoPE format effect {word} at toy scale: {sum(1 for c in claims if c[3] == 'holds')} of 3 claims "
               f"hold (BOS speed-up {claims[0][2]}; 2x token accuracy with BOS, EOS absent → scored: {claims[1][2]}; "
               f"`x SEP x` at 2x: {claims[2][2]}).")
    comparison = md_table(["claim", "earlier measurement (PyTorch)", "pelab", "verdict"], claims)
    return verdict, comparison, tables


def page_ruoss(run_dir, rows):
    """Randomized positions: mean gain in token accuracy beyond the training length, per task and encoding."""
    ood = lengths(rows, False)
    tasks, encs = values_of(rows, "task.name"), values_of(rows, "encoding.name")

    def ood_mean(task, enc, pos):
        v = [cell(rows, "token_acc", L, task_name=task, encoding_name=enc, train_positions=pos) for L in ood]
        if any(c is None or c["mean"] is None for c in v):
            return None
        return sum(c["mean"] for c in v) / len(v)

    body, gains = [], []
    for task in tasks:
        for enc in encs:
            c, r = ood_mean(task, enc, "contiguous"), ood_mean(task, enc, "randomized")
            ind_c = cell(rows, "token_acc", max(lengths(rows, True)), task_name=task, encoding_name=enc, train_positions="contiguous")
            ind_r = cell(rows, "token_acc", max(lengths(rows, True)), task_name=task, encoding_name=enc, train_positions="randomized")
            g = None if c is None or r is None else r - c
            if g is not None:
                gains.append(g)
            body.append([task, enc, mean_std(ind_c), mean_std(ind_r), pct(c), pct(r),
                         "n/a" if g is None else f"{100 * g:+.1f}"])
    mean_gain = sum(gains) / len(gains) if gains else None
    positive = sum(1 for g in gains if g > 0)
    tables = (f"Token accuracy (%): in distribution (size {max(lengths(rows, True))}, mean ± std (seeds)) and the mean over "
              f"the out-of-distribution sizes {', '.join(map(str, ood))}; gain = randomized − contiguous, in points:\n\n"
              + md_table(["task", "encoding", "in-dist contiguous", "in-dist randomized", "OOD contiguous",
                          "OOD randomized", "gain"], body))
    if mean_gain is None:
        word = "cannot be judged"
    elif mean_gain >= 0.06 and positive > len(gains) / 2:
        word = "reproduces"
    elif mean_gain > 0.01:
        word = "partly reproduces"
    else:
        word = "does not reproduce"
    verdict = (f"Randomized positions' length-generalization gain {word} at toy scale: mean gain beyond the training "
               f"length {'n/a' if mean_gain is None else f'{100 * mean_gain:+.1f}'} points over "
               f"{len(gains)} task × encoding pairs ({positive} positive), against the paper's +12.0.")
    comparison = md_table(["", "Ruoss et al. 2023", "pelab"],
                          [["mean gain beyond the training length (points)", "+12.0 (15 tasks, 5 encodings)",
                            "n/a" if mean_gain is None else f"{100 * mean_gain:+.1f} ({len(gains)} pairs)"],
                           ["pairs with a gain", "most", f"{positive}/{len(gains)}"]])
    return verdict, comparison, tables


def page_press(run_dir, rows):
    """Loss per position at the longest context: the rise past L relative to the last in-context bucket."""
    runs = read_eval_jsons(run_dir)
    by_enc = {}
    for assignment, results in runs:
        enc = assignment.get("encoding.name")
        ok = [r for r in results if r.get("status") == "ok" and r.get("buckets")]
        if enc is None or not ok:
            continue
        longest = max(ok, key=lambda r: r["length"])
        by_enc.setdefault(enc, []).append(longest)
    if not by_enc:
        raise PageError(f"{run_dir}: no eval.json with per-position buckets")
    train_len = min(lengths(rows, True)) if lengths(rows, True) else None
    body, rise = [], {}
    header = None
    for enc, rs in by_enc.items():
        buckets = rs[0]["buckets"]
        if header is None:
            header = ["encoding"] + [f"{b['from']}–{b['to']}" for b in buckets]
        means = []
        for i in range(len(buckets)):
            v = [r["buckets"][i]["loss"] for r in rs if i < len(r["buckets"]) and r["buckets"][i]["loss"] is not None]
            means.append(sum(v) / len(v) if v else None)
        body.append([enc] + ["n/a" if m is None else f"{m:.3f}" for m in means])
        inside = [m for b, m in zip(buckets, means) if m is not None and b["to"] <= train_len]
        beyond = [m for b, m in zip(buckets, means) if m is not None and b["from"] >= train_len]
        if inside and beyond:
            rise[enc] = (sum(beyond) / len(beyond)) / inside[-1] - 1
    tables = (f"Held-out loss (nats per character) per position bucket at context {rs[0]['length']} "
              f"(training context {train_len}; mean over seeds):\n\n" + md_table(header, body)
              + "\n\nRelative rise = mean loss of the buckets past the training context / loss of the last bucket "
              "inside it − 1: " + ", ".join(f"{e} {100 * r:+.1f}%" for e, r in rise.items()) + ".")
    alibi, sin = rise.get("alibi"), rise.get("sinusoidal")
    held = 0.0
    held += 1 if alibi is not None and alibi <= 0.05 else 0.5 if alibi is not None and alibi <= 0.15 else 0
    held += 1 if sin is not None and sin >= 0.25 else 0.5 if sin is not None and sin >= 0.10 else 0
    word = verdict_word(held, 2)
    f = lambda e: "n/a" if rise.get(e) is None else f"{100 * rise[e]:+.1f}%"
    verdict = (f"Press et al.'s extrapolation claim {word} at toy scale: past the training context the loss changes by "
               f"{f('alibi')} with ALiBi (flat: within +5%), {f('sinusoidal')} with sinusoidal (sharp rise: ≥ +25%), "
               f"{f('rope')} with RoPE.")
    comparison = md_table(["encoding", "Press et al. 2022 (WikiText-103, L = 512)", "pelab: loss past L vs at L"],
                          [["ALiBi", "flat or improving out to many times L", f("alibi")],
                           ["sinusoidal", "perplexity rises sharply within a short distance past L", f("sinusoidal")],
                           ["RoPE", "rises, more slowly than sinusoidal", f("rope")]])
    return verdict, comparison, tables


KAZEMNEJAD_MRR = {"none": 0.69, "t5": 0.55, "alibi": 0.50, "rope": 0.33, "sinusoidal": 0.22}


def average_ranks(scores):
    """Rank 1 = best (highest); None ranks after every score; ties share the average rank."""
    order = sorted(scores, key=lambda k: (scores[k] is None, -(scores[k] or 0)))
    ranks, i = {}, 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def kendall_tau(a, b):
    keys = list(a)
    conc = disc = 0
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            s = (a[keys[i]] - a[keys[j]]) * (b[keys[i]] - b[keys[j]])
            conc += s > 0
            disc += s < 0
    n = len(keys) * (len(keys) - 1) / 2
    return (conc - disc) / n if n else 0.0


def page_kazemnejad(run_dir, rows):
    """Exact match per task beyond the training length, ranks per task, MRR across tasks."""
    ood, ind = lengths(rows, False), lengths(rows, True)
    tasks, encs = values_of(rows, "task.name"), values_of(rows, "encoding.name")
    score, body, unlearned, informative = {}, [], [], []
    for task in tasks:
        s = {}
        best_ind = 0.0
        for enc in encs:
            v = [cell(rows, "exact_match", L, task_name=task, encoding_name=enc) for L in ood]
            s[enc] = None if any(c is None or c["mean"] is None for c in v) else sum(c["mean"] for c in v) / len(v)
            chance = [c["chance"] for c in v if c is not None and c["chance"] is not None]
            # A task separates the encodings when one of them is 5 points above chance beyond the training length.
            if s[enc] is not None and s[enc] - (sum(chance) / len(chance) if chance else 0.0) >= 0.05 \
                    and task not in informative:
                informative.append(task)
            c_ind = cell(rows, "exact_match", max(ind), task_name=task, encoding_name=enc)
            if c_ind and c_ind["mean"] is not None:
                best_ind = max(best_ind, c_ind["mean"])
            body.append([task, enc, mean_std(c_ind)] + [mean_std(cell(rows, "exact_match", L, task_name=task, encoding_name=enc))
                                                        for L in ood])
        if best_ind < 0.5:
            unlearned.append(task)
        score[task] = s
    ranks = {t: average_ranks(score[t]) for t in tasks}
    mrr = {e: sum(1 / ranks[t][e] for t in tasks) / len(tasks) for e in encs}
    rank_rows = [[e] + [f"{ranks[t][e]:g}" for t in tasks] + [f"{mrr[e]:.2f}", f"{KAZEMNEJAD_MRR.get(e, float('nan')):.2f}"]
                 for e in sorted(encs, key=lambda e: -mrr[e])]
    tables = (f"Exact match (%) at the largest training size {max(ind)} and beyond it (mean ± std (seeds)):\n\n"
              + md_table(["task", "encoding", f"{max(ind)} (in dist.)"] + [str(L) for L in ood], body)
              + f"\n\nRanks per task (by mean exact match over sizes {', '.join(map(str, ood))}; ties share the average "
              "rank) and the mean reciprocal rank:\n\n"
              + md_table(["encoding"] + tasks + ["MRR (pelab)", "MRR (paper)"], rank_rows))
    tables += (f"\n\nTasks on which some encoding is at least 5 points above chance beyond the training length: "
               f"{', '.join(informative) or 'none'}; on the others every rank is a tie or noise around chance.")
    if unlearned:
        tables += (f"\n\nNo encoding reached 50% exact match in distribution on: {', '.join(unlearned)}; "
                   "their ranks compare failures (near-ties), not generalization.")
    common = {e: mrr[e] for e in encs if e in KAZEMNEJAD_MRR}
    tau = kendall_tau(common, {e: KAZEMNEJAD_MRR[e] for e in common}) if len(common) > 1 else None
    top = max(mrr.values())
    nope_top = "none" in mrr and mrr["none"] >= top - 1e-12
    nope_top2 = "none" in mrr and sorted(mrr.values(), reverse=True).index(mrr["none"]) <= 1
    if nope_top and tau is not None and tau >= 0.6:
        word = "reproduces"
    elif nope_top2 or (tau is not None and tau > 0):
        word = "partly reproduces"
    else:
        word = "does not reproduce"
    few = len(informative) < 3
    if few and word == "reproduces":
        word = "partly reproduces"
    order = " > ".join(f"{e} {mrr[e]:.2f}" for e in sorted(encs, key=lambda e: -mrr[e]))
    verdict = (f"Kazemnejad et al.'s ranking {word} at toy scale: pelab's MRR order is {order} (paper: none 0.69 > t5 "
               f"0.55 > alibi 0.50 > rope 0.33 > sinusoidal 0.22; Kendall tau with the paper's order "
               f"{'n/a' if tau is None else f'{tau:+.2f}'}; {len(informative)} of {len(tasks)} tasks separate the encodings "
               f"above chance{', too few to call it reproduced' if few else ''}).")
    comparison = md_table(["encoding", "MRR, Kazemnejad et al. 2023 (10 tasks)", f"MRR, pelab ({len(tasks)} tasks)"],
                          [[e, f"{KAZEMNEJAD_MRR[e]:.2f}", f"{mrr[e]:.2f}" if e in mrr else "not run"] for e in KAZEMNEJAD_MRR])
    return verdict, comparison, tables


RECIPES = {
    "format": ("NoPE and the sequence format (a finding of our own)", page_format),
    "ruoss": ("Ruoss et al. 2023, randomized positional encodings", page_ruoss),
    "press": ("Press et al. 2022, ALiBi: train short, test long", page_press),
    "kazemnejad": ("Kazemnejad et al. 2023, positional encodings and length generalization", page_kazemnejad),
}


def write_page(name, run_dir, config, quick, out, copy=None):
    if name not in RECIPES:
        raise PageError(f"unknown recipe '{name}'; known: {', '.join(RECIPES)}")
    title, fn = RECIPES[name]
    rows = read_summary(run_dir)
    verdict, comparison, tables = fn(run_dir, rows)
    times = read_times(run_dir)
    variant = (f"**quick variant** (`--quick`: {quick_overrides(config) or 'no overrides'}): fewer seeds and/or steps "
               "than the recipe's full setting") if quick else "full setting"
    if times:
        cpu = "CPU time not recorded" if times["cpu"] is None else f"{times['cpu'] / 60:.1f} min CPU (user + sys of the training processes)"
        # CPU over wall says how many cores the sweep actually had: near --jobs on a quiet machine, less
        # when other work shared it (then the wall time is an upper bound).
        used = "" if times["cpu"] is None or times["wall"] <= 0 else \
            f"; the training processes kept {times['cpu'] / times['wall']:.1f} cores busy on average"
        timing = (f"{times['wall'] / 60:.1f} min wall, {cpu}, `--jobs {times['jobs']}`, over {times['runs']} invocation(s) of reproduce.sh, last "
                  f"{times['last']}, on a machine with {os.cpu_count()} cores{used}")
    else:
        timing = "not recorded (no reproduce_times.txt: the sweep was not run by scripts/reproduce.sh)"
    rel_config = os.path.relpath(config, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    header = config_header(config)
    text = f"""# Reproduction: {title}

**Verdict:** {verdict}

Recipe `{rel_config}`, {variant}; `scripts/reproduce.sh {name}{' --quick' if quick else ''}`.
Time: {timing}.

## The paper and this recipe (from the config's header)

```
{header}
```

## The claim, the paper's numbers and pelab's

{comparison}

## pelab's numbers

{tables}

{{plot}}All numbers come from `{os.path.basename(os.path.normpath(run_dir))}/summary.csv` (and its eval.json / steps_to_target.csv); the
full report with plots is `report.html` in the run directory. The verdict's thresholds are in
`scripts/reproduce_page.py` (page_{name}).
"""
    # The report's main plot: linked from the run directory's page, copied beside the page's copy.
    plot = next((p for p in ("loss_by_position.png", "length_generalization.png")
                 if os.path.isfile(os.path.join(run_dir, "plots", p))), None)
    pages = [(out, f"![{plot}](plots/{plot})\n\n" if plot else "")]
    if copy:
        png = os.path.splitext(os.path.basename(copy))[0] + "." + plot if plot else None
        pages.append((copy, f"![{plot}]({png})\n\n" if plot else ""))
        if plot:
            shutil.copyfile(os.path.join(run_dir, "plots", plot), os.path.join(os.path.dirname(copy) or ".", png))
    for path, link in pages:
        with open(path + ".tmp", "w") as f:
            f.write(text.replace("{plot}", link))
        os.replace(path + ".tmp", path)
    return verdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("run_dir")
    ap.add_argument("--config", required=True)
    ap.add_argument("--quick", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--copy")
    a = ap.parse_args()
    try:
        print(write_page(a.name, a.run_dir, a.config, a.quick, a.out, a.copy))
    except (PageError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
