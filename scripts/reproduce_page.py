#!/usr/bin/env python3
"""reproduce_page.py NAME RUN_DIR: the result page of a reproduction recipe (scripts/reproduce.sh runs it).

Reads what `pelab sweep` + `pelab report` wrote into RUN_DIR (summary.csv, results.csv, steps_to_target.csv,
each run's eval.json) and RUN_DIR/reproduce_times.txt (one line per reproduce.sh invocation: date, wall s,
CPU s, jobs, overrides), puts the paper's numbers (cited) beside pelab's and computes a one-sentence
verdict: reproduces / partly / not, or "not comparable" when the model fails the recipe's competence gate
(section "checks" below: the gate, seed-level ties, the rank rule, the budget policy). The paper's setting
and what is scaled down are quoted from the recipe config's header. Standard library only (Python 3.11+
for tomllib); exit code 2 with a message on missing or malformed input.
"""
import argparse
import csv
import itertools
import json
import math
import os
import re
import shutil
import sys
import tomllib


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


# ---------------------------------------------------------------------------------------------- checks
# What every verdict checks before it judges extrapolation (issue #24, item 1):
# - a competence gate: in distribution the model beats a named baseline by a stated margin, or the
#   verdict is "not comparable: the model did not learn the task";
# - a tie rule: an order the seeds cannot separate (mean ± sample std over seeds overlap) is a tie;
# - a rank rule: a claimed order must be one that a random order reaches with probability < ALPHA
#   (Kendall tau, exact permutation distribution);
# - the budget policy of every table (first fit or fixed steps; the last model is evaluated).

GATE_FRACTION = 0.8  # accuracy tasks: in distribution, close >= 80% of the gap from chance to 100%
LM_MARGIN = 0.10     # language models: held-out loss inside the context >= 0.10 nats/char below the bigram's
ALPHA = 0.05         # rank claims: P(a random order has tau >= the observed tau) < ALPHA
MIN_SEEDS = 3        # fewer seeds than this: the verdict is provisional


def gate_threshold(chance):
    """The accuracy a group must reach in distribution: chance + GATE_FRACTION * (1 - chance)."""
    c = chance or 0.0
    return c + GATE_FRACTION * (1 - c)


def gate_accuracy(c):
    """(passes, threshold) for a summary cell of an accuracy metric in distribution; a missing cell fails."""
    if c is None or c["mean"] is None:
        return False, None
    t = gate_threshold(c["chance"])
    return c["mean"] >= t, t


GATE_ACC_TEXT = (f"in-distribution accuracy (the metric named in the table, mean over seeds, at the largest training size) "
                 f"≥ chance + {GATE_FRACTION:g} × (1 − chance), i.e. at least {100 * GATE_FRACTION:.0f}% of the way from "
                 "chance (the report's chance level for that size and metric) to 100%")


def mean_sd(v):
    """(mean, sample std or None, n) of a list of numbers."""
    n = len(v)
    if n == 0:
        return None, None, 0
    m = sum(v) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1)) if n > 1 else None
    return m, sd, n


def separated(a, b):
    """a above b beyond the seed spread: mean_a - std_a > mean_b + std_b (both with >= 2 seeds). a, b: (mean, std, n)."""
    if a[0] is None or b[0] is None or a[2] < 2 or b[2] < 2:
        return False
    return a[0] - a[1] > b[0] + b[1]


def tie_ranks(stats):
    """Rank 1 = best (highest mean); items whose mean ± std overlap the next one's (chained), or that have fewer than
    2 seeds, share a group and its average rank. stats: {item: (mean, std, n)}, mean None = last. -> ({item: rank},
    [[items of a group], ...] best group first)."""
    order = sorted(stats, key=lambda k: (stats[k][0] is None, -(stats[k][0] or 0.0)))
    groups = []
    for k in order:
        if groups and (stats[k][0] is None and stats[groups[-1][-1]][0] is None
                       or stats[k][0] is not None and not separated(stats[groups[-1][-1]], stats[k])):
            groups[-1].append(k)
        else:
            groups.append([k])
    ranks, i = {}, 0
    for g in groups:
        for k in g:
            ranks[k] = i + (len(g) + 1) / 2
        i += len(g)
    return ranks, groups


def kendall_tau(a, b):
    """Kendall's tau-a of two score dicts over the same keys (tied pairs count 0)."""
    keys = list(a)
    conc = disc = 0
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            s = (a[keys[i]] - a[keys[j]]) * (b[keys[i]] - b[keys[j]])
            conc += s > 0
            disc += s < 0
    n = len(keys) * (len(keys) - 1) / 2
    return (conc - disc) / n if n else 0.0


def tau_p_value(a, b):
    """P(tau(random order, b) >= tau(a, b)): a's values (ties kept) assigned to the keys in every one of the n! ways."""
    keys = list(a)
    observed = kendall_tau(a, b)
    hits = total = 0
    for perm in itertools.permutations([a[k] for k in keys]):
        total += 1
        hits += kendall_tau(dict(zip(keys, perm)), b) >= observed - 1e-12
    return hits / total


def tau_tail(n):
    """{tau: P(tau of a random order of n tie-free items with a fixed order >= tau)}, exact over the n! orders."""
    ref = {i: float(n - i) for i in range(n)}
    taus = [round(kendall_tau({i: float(p[i]) for i in range(n)}, ref), 9) for p in itertools.permutations(range(n))]
    return {t: sum(x >= t for x in taus) / len(taus) for t in sorted(set(taus))}


def rank_rule_text(n):
    """The rank rule in words, with this n's exact numbers."""
    tail = tau_tail(n)
    need = min((t for t, p in tail.items() if p < ALPHA), default=None)
    at06 = next((p for t, p in sorted(tail.items()) if t >= 0.6 - 1e-9), 0.0)
    return (f"the order holds when a random order of the {n} items reaches the observed Kendall tau (tau-a, tied pairs "
            f"count 0) with probability < {ALPHA:g}, exact over all {math.factorial(n)} orders (ties kept as observed)"
            + ("" if need is None else f"; for {n} items without ties that needs tau ≥ {need:.2f}")
            + f" (tau ≥ 0.60 happens by chance with probability {at06:.3f})")


def bigram_loss(path, holdout):
    """Held-out loss (nats/char) of a byte bigram with add-one (Laplace) smoothing, fitted on the char_lm task's
    training split of `path` and scored on every consecutive pair of its held-out split. The split and vocabulary
    are the task's (experiments/tasks/char_lm.cpp): the last round(holdout * size) bytes are held out; the
    vocabulary is every distinct byte of the file. -> (loss, vocabulary size, training bytes, held-out pairs)."""
    with open(path, "rb") as f:
        text = f.read()
    held = int(math.floor(holdout * len(text) + 0.5))
    train, test = text[:len(text) - held], text[len(text) - held:]
    vocab = len(set(text))
    pair, prev = {}, {}
    for a, b in zip(train, train[1:]):
        pair[(a, b)] = pair.get((a, b), 0) + 1
        prev[a] = prev.get(a, 0) + 1
    pairs = list(zip(test, test[1:]))
    if not pairs:
        raise PageError(f"{path}: the held-out split has no pair of bytes")
    loss = -sum(math.log((pair.get((a, b), 0) + 1) / (prev.get(a, 0) + vocab)) for a, b in pairs) / len(pairs)
    return loss, vocab, len(train), len(pairs)


def budget_policy(config, quick):
    """One sentence: how long each run of the recipe trains, and which model its tables evaluate."""
    with open(config, "rb") as f:
        cfg = tomllib.load(f)
    train = cfg.get("train", {})
    steps = train.get("steps")
    if quick:
        for m in re.finditer(r"train\.steps=(\d+)", quick_overrides(config)):
            steps = int(m.group(1))
    if train.get("early_stop_target") is not None:
        return (f"first fit: each run stops at the first held-out evaluation (every {train.get('eval_every', '?')} steps, at "
                f"the training length) where {train.get('early_stop_metric')} ≥ {train['early_stop_target']:g}, or at "
                f"{steps} steps if it never does; the model of the last step is evaluated (not the best one)")
    return f"fixed steps: every run trains {steps} steps; the model of the last step is evaluated (not the best one)"


def read_results(run_dir):
    """results.csv (one row per run, eval length and metric; per-seed values) as a list of dicts."""
    path = os.path.join(run_dir, "results.csv")
    if not os.path.isfile(path):
        raise PageError(f"{path}: missing (the seed-level tie rule needs it; `pelab report` writes it)")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def seed_scores(results, metric, lens, **group):
    """Per seed, the mean of `metric` over the eval lengths `lens` (a seed missing one of them is left out)."""
    by_seed = {}
    for r in results:
        if r["metric"] != metric or int(r["eval_len"]) not in lens or r["value"] == "":
            continue
        if all(r.get(k.replace("_", ".", 1)) == v for k, v in group.items()):
            by_seed.setdefault(r["seed"], {})[int(r["eval_len"])] = float(r["value"])
    return [sum(v.values()) / len(v) for v in by_seed.values() if len(v) == len(lens)]


def fewest_seeds(rows):
    return min((r["n"] for r in rows), default=0)


def provisional(rows):
    n = fewest_seeds(rows)
    if n >= MIN_SEEDS:
        return ""
    return (f" Provisional: {n} seed(s) per group, fewer than the {MIN_SEEDS} the rules assume"
            + ("; with one seed no order can be separated, so every order is a tie." if n < 2 else "."))


# ---------------------------------------------------------------------------------------------- recipes

def verdict_word(held, total):
    """All claims hold -> reproduces, some (or partly) -> partly, none -> not (held may count halves)."""
    if held >= total:
        return "reproduces"
    if held > 0:
        return "partly reproduces"
    return "does not reproduce"


NOT_COMPARABLE = "is not comparable: the model did not learn the task"


def checks_text(gate, ties, budget, rank=None):
    lines = [f"- **Competence gate** (checked before extrapolation is judged): {gate}",
             f"- **Ties**: {ties}"]
    if rank:
        lines.append(f"- **Rank rule**: {rank}")
    lines.append(f"- **Budget policy** (every table on this page): {budget}.")
    return "\n".join(lines)


TIE_TEXT = ("an order between two groups holds only when their seed-level scores separate: mean − sample std of the "
            "higher > mean + sample std of the lower (over seeds; a group with one seed separates from nothing); "
            "otherwise the page writes a tie")


def page_format(run_dir, rows, config, quick):
    """NoPE format effect: BOS speeds learning, scored EOS lowers 2x accuracy, x SEP x above chance at 2x."""
    steps = read_steps(run_dir)
    train_len = min(lengths(rows, True))
    two_x = 2 * train_len
    if two_x not in lengths(rows):
        raise PageError(f"summary.csv has no length {two_x} (2x the training length {train_len})")

    def seed_steps(bos, eos):  # steps to target per run; a run that never reached it counts at its last step
        v, reached = [], 0
        for r in steps:
            if r.get("task.bos") == bos and r.get("task.eos") == eos:
                reached += r["reached"] == "true"
                v.append(float(r["steps_to_target"] if r["reached"] == "true" else r["steps"]))
        return mean_sd(v), reached

    body, acc, gate = [], {}, {}
    for bos in ("true", "false"):
        for eos in ("scored", "absent"):
            (s, sd, n), reached = seed_steps(bos, eos)
            c1 = cell(rows, "token_acc", train_len, task_bos=bos, task_eos=eos)
            c = cell(rows, "token_acc", two_x, task_bos=bos, task_eos=eos)
            acc[(bos, eos)] = c
            gate[(bos, eos)], thr = gate_accuracy(c1)
            body.append([f"bos={bos}, eos={eos}",
                         "n/a" if s is None else f"{s:.0f}" + ("" if sd is None else f" ± {sd:.0f}") + ("" if reached == n else " (≥)"),
                         f"{reached}/{n}", mean_std(c1), pct(thr), "passes" if gate[(bos, eos)] else "fails",
                         mean_std(c), pct(c["chance"] if c else None)])
    tables = (f"Steps to 99% held-out token accuracy at size {train_len} (mean ± sample std over seeds; a run that never "
              "reached it counts at its last step, marked ≥), token accuracy (%) at 1x and 2x (mean ± sample std (seeds)), "
              "and the competence gate on the 1x token accuracy:\n\n"
              + md_table(["format", "steps to 99%", "reached", f"token acc {train_len} (%)", "gate: needs ≥ (%)", "gate",
                          f"token acc {two_x} (2x, %)", f"chance {two_x} (%)"], body))

    claims, held, judged = [], 0.0, 0

    def comparable(*fmts):
        return all(gate[f] for f in fmts)

    # 1. BOS speeds learning: geometric mean of the two ratios, each pair separated by the seeds.
    if not comparable(("true", "scored"), ("false", "scored"), ("true", "absent"), ("false", "absent")):
        claims.append(["BOS speeds learning", "~2x faster with <BOS>", "n/a", "not comparable (gate)"])
    else:
        ratios, sep = [], 0
        for eos in ("scored", "absent"):
            a, _ = seed_steps("true", eos)
            b, _ = seed_steps("false", eos)
            if a[0] and b[0]:
                ratios.append(b[0] / a[0])
                sep += separated(b, a)
        ratio = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
        ok = ratio is not None and ratio >= 1.5 and sep == 2
        half = not ok and ratio is not None and ratio > 1.1 and sep >= 1
        judged += 1
        held += 1 if ok else 0.5 if half else 0
        claims.append(["BOS speeds learning", "~2x faster with <BOS>",
                       "n/a" if ratio is None else f"{ratio:.2f}x (steps to 99%, geometric mean over the eos settings; "
                                                   f"separated by the seeds in {sep} of 2)",
                       "holds" if ok else "weakly" if half else "no" if ratio is None or ratio <= 1.1 else "tie (seeds)"])
    # 2. Scored EOS (with BOS) lowers the 2x token accuracy.
    sc, ab = acc[("true", "scored")], acc[("true", "absent")]
    if not comparable(("true", "scored"), ("true", "absent")):
        claims.append(["scored EOS (with BOS) lowers 2x token accuracy", "0.63–0.68 → 0.20–0.22 (d=128)", "n/a",
                       "not comparable (gate)"])
    else:
        drop = None if not sc or not ab or sc["mean"] is None or ab["mean"] is None else ab["mean"] - sc["mean"]
        sep = drop is not None and separated((ab["mean"], ab["std"], ab["n"]), (sc["mean"], sc["std"], sc["n"]))
        ok = drop is not None and drop >= 0.2 and sep
        half = not ok and drop is not None and drop > 0.05 and sep
        judged += 1
        held += 1 if ok else 0.5 if half else 0
        claims.append(["scored EOS (with BOS) lowers 2x token accuracy", "0.63–0.68 → 0.20–0.22 (d=128)",
                       "n/a" if drop is None else f"token acc. {ab['mean']:.2f} → {sc['mean']:.2f}",
                       "holds" if ok else "weakly" if half else "no" if drop is None or drop <= 0.05 else "tie (seeds)"])
    # 3. x SEP x above chance at 2x, by 5 points beyond one sample std.
    xs = acc[("false", "absent")]
    if not comparable(("false", "absent")):
        claims.append(["`x SEP x` (no BOS, no EOS): NoPE above chance at 2x", "above chance", "n/a", "not comparable (gate)"])
    else:
        margin = None if not xs or xs["mean"] is None or xs["chance"] is None else xs["mean"] - (xs["std"] or 0) - xs["chance"]
        ok = margin is not None and margin >= 0.05 and xs["n"] >= 2
        judged += 1
        held += 1 if ok else 0
        claims.append(["`x SEP x` (no BOS, no EOS): NoPE above chance at 2x", "above chance",
                       "n/a" if margin is None else f"token acc. {xs['mean']:.2f} ± {xs['std'] or 0:.2f} vs chance {xs['chance']:.2f}",
                       "holds" if ok else "no"])
    if judged == 0:
        word = NOT_COMPARABLE
    else:
        word = verdict_word(held, 3)
    skipped = 3 - judged
    verdict = (f"The NoPE format effect {word} at toy scale: {sum(1 for c in claims if c[3] == 'holds')} of 3 claims "
               f"hold{f', {skipped} not comparable (a format failed the competence gate)' if skipped else ''} (BOS speed-up "
               f"{claims[0][2]}; 2x token accuracy with BOS, EOS absent → scored: {claims[1][2]}; "
               f"`x SEP x` at 2x: {claims[2][2]})." + provisional(rows))
    comparison = md_table(["claim", "earlier measurement (PyTorch)", "pelab", "verdict"], claims)
    checks = checks_text(
        f"each of the four formats: {GATE_ACC_TEXT}; metric token accuracy at size {train_len}. A claim that involves a "
        "format that fails it is not comparable.",
        TIE_TEXT + ". Claim 1 needs the two step counts separated for both eos settings (one: weakly); claim 2 the two 2x "
                   "accuracies; claim 3 needs mean − std ≥ chance + 5 points at 2x.",
        budget_policy(config, quick))
    return verdict, comparison, tables, checks


RUOSS_LIMIT = ("Limit: Ruoss et al.'s +12.0 is test accuracy averaged over test lengths 41–500 and then over 15 tasks of "
               "the Chomsky-hierarchy suite and their encodings; pelab's gain is token accuracy averaged over sizes {ood} "
               "on 2 of those tasks (copy and reverse, among the easiest) and {n_enc} encodings. The two numbers are not "
               "the same quantity: the verdict judges only the direction and spread of the gain on copy and reverse, not "
               "the paper's 15-task average.")


def page_ruoss(run_dir, rows, config, quick):
    """Randomized positions: mean gain in token accuracy beyond the training length, per task and encoding."""
    ood = lengths(rows, False)
    ind = max(lengths(rows, True))
    tasks, encs = values_of(rows, "task.name"), values_of(rows, "encoding.name")
    results = read_results(run_dir)

    def ood_mean(task, enc, pos):
        v = [cell(rows, "token_acc", L, task_name=task, encoding_name=enc, train_positions=pos) for L in ood]
        if any(c is None or c["mean"] is None for c in v):
            return None
        return sum(c["mean"] for c in v) / len(v)

    body, gains, sep_pos, excluded = [], [], 0, []
    for task in tasks:
        for enc in encs:
            c, r = ood_mean(task, enc, "contiguous"), ood_mean(task, enc, "randomized")
            ind_c = cell(rows, "token_acc", ind, task_name=task, encoding_name=enc, train_positions="contiguous")
            ind_r = cell(rows, "token_acc", ind, task_name=task, encoding_name=enc, train_positions="randomized")
            ok_c, _ = gate_accuracy(ind_c)
            ok_r, thr = gate_accuracy(ind_r)
            g = None if c is None or r is None else r - c
            sc = mean_sd(seed_scores(results, "token_acc", ood, task_name=task, encoding_name=enc, train_positions="contiguous"))
            sr = mean_sd(seed_scores(results, "token_acc", ood, task_name=task, encoding_name=enc, train_positions="randomized"))
            sep = separated(sr, sc)
            if ok_c and ok_r and g is not None:
                gains.append(g)
                sep_pos += sep and g > 0
                state = "gain" if sep and g > 0 else "loss" if separated(sc, sr) else "tie (seeds)"
            else:
                excluded.append(f"{task} × {enc}")
                state = "not comparable (gate)"
            body.append([task, enc, mean_std(ind_c) + ("" if ok_c else " ✗"), mean_std(ind_r) + ("" if ok_r else " ✗"),
                         pct(thr), pct(c), pct(r), "n/a" if g is None else f"{100 * g:+.1f}", state])
    mean_gain = sum(gains) / len(gains) if gains else None
    tables = (f"Token accuracy (%): in distribution (size {ind}, mean ± sample std (seeds); ✗ = fails the competence "
              f"gate, whose threshold is the next column) and the mean over the out-of-distribution sizes "
              f"{', '.join(map(str, ood))}; gain = randomized − contiguous, in points of token accuracy; the last column "
              "applies the seed-level tie rule to the two out-of-distribution means:\n\n"
              + md_table(["task", "encoding", "in-dist contiguous", "in-dist randomized", "gate: needs ≥", "OOD contiguous",
                          "OOD randomized", "gain (points)", "seeds"], body))
    if mean_gain is None:
        word = NOT_COMPARABLE
    elif mean_gain >= 0.06 and sep_pos > len(gains) / 2:
        word = "reproduces"
    elif mean_gain > 0.01 and sep_pos > 0:
        word = "partly reproduces"
    else:
        word = "does not reproduce"
    skipped = f"; {len(excluded)} pair(s) not comparable: {'; '.join(excluded)}" if excluded else ""
    limit = RUOSS_LIMIT.format(ood="–".join(map(str, (ood[0], ood[-1]))) if ood else "n/a", n_enc=len(encs))
    verdict = (f"Randomized positions' length-generalization gain on copy and reverse {word} at toy scale: mean gain in "
               f"token accuracy beyond the training length "
               f"{'n/a' if mean_gain is None else f'{100 * mean_gain:+.1f}'} points over the {len(gains)} task × encoding "
               f"pairs that pass the competence gate ({sep_pos} with a gain the seeds separate"
               f"{skipped}). "
               + limit + provisional(rows))
    comparison = md_table(["", "Ruoss et al. 2023", "pelab"],
                          [["gain beyond the training length (points)",
                            "+12.0: accuracy averaged over lengths 41–500, then over 15 tasks and the encodings",
                            "n/a" if mean_gain is None else
                            f"{100 * mean_gain:+.1f}: token accuracy averaged over sizes {', '.join(map(str, ood))}, "
                            f"then over {len(gains)} pairs (copy, reverse)"],
                           ["pairs with a gain", "most", f"{sep_pos}/{len(gains)} separated by the seeds"]])
    checks = checks_text(
        f"every task × encoding × positions group: {GATE_ACC_TEXT}; metric token accuracy at size {ind}. A pair "
        "(contiguous, randomized) enters the mean gain only when both of its groups pass.",
        TIE_TEXT + " (score: a seed's token accuracy averaged over the out-of-distribution sizes, from results.csv). "
                   "Reproduces: mean gain ≥ 6 points and more than half of the comparable pairs with a separated gain; "
                   "partly: mean gain > 1 point and at least one separated gain.",
        budget_policy(config, quick))
    return verdict, comparison, tables, checks


def page_press(run_dir, rows, config, quick):
    """Loss per position at the longest context: the rise past L relative to the last in-context bucket, after a
    competence gate against a bigram on the same held-out text."""
    with open(config, "rb") as f:
        lm = tomllib.load(f).get("task", {}).get("char_lm", {})
    corpus, holdout = lm.get("path", "/usr/share/games/fortunes/literature"), float(lm.get("holdout", 0.1))
    try:
        bigram, vocab, n_train, n_pairs = bigram_loss(corpus, holdout)
    except OSError as e:
        raise PageError(f"the bigram baseline needs the recipe's corpus: {e}")
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

    def rise_of(buckets):
        inside = [b["loss"] for b in buckets if b["loss"] is not None and b["to"] <= train_len]
        beyond = [b["loss"] for b in buckets if b["loss"] is not None and b["from"] >= train_len]
        return (sum(beyond) / len(beyond)) / inside[-1] - 1 if inside and beyond else None

    body, rise, gate, gate_rows = [], {}, {}, []
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
        rise[enc] = mean_sd([x for x in (rise_of(r["buckets"]) for r in rs) if x is not None])
        c = cell(rows, "loss", train_len, encoding_name=enc)
        gate[enc] = c is not None and c["mean"] is not None and c["mean"] <= bigram - LM_MARGIN
        gate_rows.append([enc, "n/a" if c is None or c["mean"] is None else
                          f"{c['mean']:.3f}" + (f" ± {c['std']:.3f}" if c["std"] is not None and c["n"] > 1 else "") + f" ({c['n']})",
                          f"{bigram:.3f}", "n/a" if c is None or c["mean"] is None else f"{c['mean'] - bigram:+.3f}",
                          "passes" if gate[enc] else "fails"])
    gate_table = md_table([f"encoding", f"held-out loss at context {train_len} (nats/char, mean ± std (seeds))",
                           "bigram, add-one (nats/char)", "model − bigram", f"gate (model − bigram ≤ −{LM_MARGIN:.2f})"], gate_rows)
    fmt = lambda e: ("n/a" if rise.get(e) is None or rise[e][0] is None else
                     f"{100 * rise[e][0]:+.1f}%" + ("" if rise[e][1] is None else f" ± {100 * rise[e][1]:.1f}"))
    tables = (f"Competence gate: held-out loss inside the training context (summary.csv, metric loss at length "
              f"{train_len}: mean over the positions of {train_len}-character held-out windows) against a byte bigram "
              f"with add-one (Laplace) smoothing fitted on the same training split ({n_train} bytes of `{corpus}`, "
              f"vocabulary of {vocab} bytes) and scored on every pair of the same held-out split (last {holdout:g} of the "
              f"file, {n_pairs} pairs): {bigram:.3f} nats/char.\n\n" + gate_table
              + f"\n\nHeld-out loss (nats per character) per position bucket at context {rs[0]['length']} "
              f"(training context {train_len}; mean over seeds):\n\n" + md_table(header, body)
              + "\n\nRelative rise in held-out loss = mean loss of the buckets past the training context / loss of the last "
              "bucket inside it − 1, per seed, mean ± sample std: " + ", ".join(f"{e} {fmt(e)}" for e in rise) + ".")
    held, judged, failed = 0.0, 0, [e for e in ("alibi", "sinusoidal", "rope") if e in gate and not gate[e]]
    alibi, sin = rise.get("alibi", (None,))[0], rise.get("sinusoidal", (None,))[0]
    if gate.get("alibi"):
        judged += 1
        held += 1 if alibi is not None and alibi <= 0.05 else 0.5 if alibi is not None and alibi <= 0.15 else 0
    if gate.get("sinusoidal"):
        judged += 1
        held += 1 if sin is not None and sin >= 0.25 else 0.5 if sin is not None and sin >= 0.10 else 0
    rope_vs_sin = "n/a"
    if gate.get("rope") and gate.get("sinusoidal") and "rope" in rise and "sinusoidal" in rise:
        rope_vs_sin = "RoPE rises less" if separated(rise["sinusoidal"], rise["rope"]) else \
            "RoPE rises more" if separated(rise["rope"], rise["sinusoidal"]) else "tie (seeds)"
    gate_note = "; ".join(f"{e} {cell(rows, 'loss', train_len, encoding_name=e)['mean']:.3f}"
                          if cell(rows, "loss", train_len, encoding_name=e) else e for e in failed)
    if not gate.get("alibi"):
        word = "is not comparable"
    elif judged < 2:
        word = "partly reproduces (sinusoidal not comparable)" if held >= 1 else "does not reproduce"
    else:
        word = verdict_word(held, 2)
    if word == "is not comparable":
        word = NOT_COMPARABLE + " (at toy scale ALiBi, whose flat loss is the claim, fails the competence gate)"
    else:
        word += " at toy scale"
    verdict = (f"Press et al.'s extrapolation claim {word}. Competence gate: held-out loss inside the "
               f"training context must be ≥ {LM_MARGIN:.2f} nats/char below an add-one byte bigram's {bigram:.3f} on the "
               f"same held-out text; "
               + (f"failed by {gate_note} (nats/char)" if failed else "every encoding passes")
               + f". Relative rise in held-out loss past the training context: {fmt('alibi')} with ALiBi (flat: within "
               f"+5%), {fmt('sinusoidal')} with sinusoidal (sharp rise: ≥ +25%), {fmt('rope')} with RoPE"
               + (f" ({rope_vs_sin} than sinusoidal)" if rope_vs_sin != "n/a" else "")
               + "; an encoding that fails the gate is shown, not judged." + provisional(rows))
    note = lambda e: "" if gate.get(e) else " (fails the gate: not comparable)"
    comparison = md_table(["encoding", "Press et al. 2022 (WikiText-103, L = 512; perplexity)",
                           "pelab: relative rise in held-out loss past L (nats/char)"],
                          [["ALiBi", "flat or improving out to many times L", fmt("alibi") + note("alibi")],
                           ["sinusoidal", "perplexity rises sharply within a short distance past L", fmt("sinusoidal") + note("sinusoidal")],
                           ["RoPE", "rises, more slowly than sinusoidal", fmt("rope") + note("rope") +
                            ("" if rope_vs_sin == "n/a" else f"; vs sinusoidal: {rope_vs_sin}")]])
    checks = checks_text(
        f"per encoding, the held-out loss inside the training context (length {train_len}, mean over seeds) ≤ the "
        f"bigram's held-out loss − {LM_MARGIN:.2f} nats/char; the bigram: bytes, add-one (Laplace) smoothing over the "
        f"task's vocabulary, fitted on the task's training split, scored on its held-out split "
        f"(`scripts/reproduce_page.py`, bigram_loss). An encoding that fails is not comparable; if ALiBi fails, the "
        f"verdict is not comparable.",
        TIE_TEXT + " (score: a seed's relative rise); it decides only whether RoPE rises less than sinusoidal. Thresholds: "
                   "ALiBi flat ≤ +5% (+15%: half), sinusoidal sharp ≥ +25% (+10%: half).",
        budget_policy(config, quick))
    return verdict, comparison, tables, checks


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


def page_kazemnejad(run_dir, rows, config, quick):
    """Exact match per task beyond the training length; per task, ranks with the seed-level tie rule, only on tasks
    every encoding learned in distribution; MRR across those tasks; the order against the paper's by an exact
    permutation test of Kendall's tau."""
    ood, ind = lengths(rows, False), lengths(rows, True)
    tasks, encs = values_of(rows, "task.name"), values_of(rows, "encoding.name")
    results = read_results(run_dir)
    body, ranked, excluded, informative, ranks, groups_of = [], [], [], [], {}, {}
    for task in tasks:
        stats, fails = {}, []
        for enc in encs:
            c_ind = cell(rows, "exact_match", max(ind), task_name=task, encoding_name=enc)
            ok, thr = gate_accuracy(c_ind)
            if not ok:
                fails.append(f"{enc} {mean_std(c_ind)}")
            stats[enc] = mean_sd(seed_scores(results, "exact_match", ood, task_name=task, encoding_name=enc))
            v = [cell(rows, "exact_match", L, task_name=task, encoding_name=enc) for L in ood]
            chance = [c["chance"] for c in v if c is not None and c["chance"] is not None]
            mean_ood = None if any(c is None or c["mean"] is None for c in v) else sum(c["mean"] for c in v) / len(v)
            # A task separates the encodings when one of them is 5 points above chance beyond the training length.
            if mean_ood is not None and mean_ood - (sum(chance) / len(chance) if chance else 0.0) >= 0.05 \
                    and task not in informative:
                informative.append(task)
            body.append([task, enc, mean_std(c_ind) + ("" if ok else " ✗"), pct(thr)]
                        + [mean_std(cell(rows, "exact_match", L, task_name=task, encoding_name=enc)) for L in ood])
        if fails:
            excluded.append(f"{task} ({', '.join(fails)})")
            continue
        ranked.append(task)
        ranks[task], groups = tie_ranks(stats)
        groups_of[task] = " > ".join(" = ".join(g) for g in groups)
    informative = [t for t in informative if t in ranked]
    tables = (f"Exact match (%) at the largest training size {max(ind)} and beyond it (mean ± sample std (seeds)); "
              f"✗ = fails the competence gate (threshold in the next column):\n\n"
              + md_table(["task", "encoding", f"{max(ind)} (in dist.)", "gate: needs ≥"] + [str(L) for L in ood], body))
    if excluded:
        tables += ("\n\nNot ranked (some encoding fails the competence gate, so an out-of-distribution failure there "
                   f"is not a length-generalization failure): {'; '.join(excluded)}.")
    if not ranked:
        verdict = (f"Kazemnejad et al.'s ranking {NOT_COMPARABLE}: on none of the {len(tasks)} tasks does every encoding "
                   f"pass the competence gate in distribution." + provisional(rows))
        comparison = md_table(["encoding", "MRR, Kazemnejad et al. 2023 (10 tasks)", "MRR, pelab"],
                              [[e, f"{KAZEMNEJAD_MRR[e]:.2f}", "not comparable"] for e in KAZEMNEJAD_MRR])
        return verdict, comparison, tables, kazemnejad_checks(config, quick, max(ind), len(encs))
    mrr = {e: sum(1 / ranks[t][e] for t in ranked) / len(ranked) for e in encs}
    rank_rows = [[e] + [f"{ranks[t][e]:g}" for t in ranked] + [f"{mrr[e]:.2f}", f"{KAZEMNEJAD_MRR.get(e, float('nan')):.2f}"]
                 for e in sorted(encs, key=lambda e: -mrr[e])]
    tables += (f"\n\nRanks per ranked task (by exact match averaged over sizes {', '.join(map(str, ood))}, per seed, then "
               "mean over seeds; encodings the seeds cannot separate share the average rank) and the mean reciprocal "
               "rank over the ranked tasks (the paper's aggregation):\n\n"
               + md_table(["encoding"] + ranked + ["MRR (pelab)", "MRR (paper)"], rank_rows)
               + "\n\nOrder per task with ties: " + "; ".join(f"{t}: {groups_of[t]}" for t in ranked) + ".")
    tables += (f"\n\nRanked tasks on which some encoding is at least 5 points above chance beyond the training length: "
               f"{', '.join(informative) or 'none'}; on the others every rank is a tie or noise around chance.")
    common = {e: mrr[e] for e in encs if e in KAZEMNEJAD_MRR}
    paper = {e: KAZEMNEJAD_MRR[e] for e in common}
    tau = kendall_tau(common, paper) if len(common) > 1 else None
    p = tau_p_value(common, paper) if len(common) > 1 else None
    if tau is None or p >= ALPHA:
        word = "does not reproduce"
    elif len(informative) < 3:
        word = "partly reproduces"
    else:
        word = "reproduces"
    order = " > ".join(" = ".join(f"{e} {mrr[e]:.2f}" for e in sorted(encs, key=lambda e: -mrr[e]) if abs(mrr[e] - m) < 1e-9)
                       for m in sorted(set(round(x, 9) for x in mrr.values()), reverse=True))
    verdict = (f"Kazemnejad et al.'s ranking {word} at toy scale: pelab's order by mean reciprocal rank (of exact match "
               f"beyond the training length) over the {len(ranked)} of {len(tasks)} tasks every encoding learned "
               f"({', '.join(ranked)}) is {order} (paper, 10 tasks: none 0.69 > t5 0.55 > alibi 0.50 > rope 0.33 > "
               f"sinusoidal 0.22); Kendall tau with the paper's order "
               f"{'n/a' if tau is None else f'{tau:+.2f}'}, reached by a random order with probability "
               f"{'n/a' if p is None else f'{p:.3f}'} (needs < {ALPHA:g}); {len(informative)} of {len(ranked)} ranked tasks "
               f"separate the encodings above chance{' (fewer than 3: at most partly)' if len(informative) < 3 else ''}."
               + provisional(rows))
    comparison = md_table(["encoding", "MRR, Kazemnejad et al. 2023 (10 tasks)", f"MRR, pelab ({len(ranked)} ranked tasks)"],
                          [[e, f"{KAZEMNEJAD_MRR[e]:.2f}", f"{mrr[e]:.2f}" if e in mrr else "not run"] for e in KAZEMNEJAD_MRR])
    return verdict, comparison, tables, kazemnejad_checks(config, quick, max(ind), len(common))


def kazemnejad_checks(config, quick, ind, n):
    return checks_text(
        f"every task × encoding: {GATE_ACC_TEXT}; metric exact match at size {ind}. A task is ranked only when every "
        "encoding passes on it.",
        TIE_TEXT + " (score: a seed's exact match averaged over the out-of-distribution sizes, from results.csv); tied "
                   "encodings share the average rank of their group (groups chain: each member overlaps the next).",
        budget_policy(config, quick),
        rank_rule_text(n) + ". Reproduces: that, and at least 3 ranked tasks on which some encoding is ≥ 5 points above "
                            "chance beyond the training length; partly: that, on fewer such tasks; otherwise does not "
                            "reproduce.")


# ------------------------------------------------------------------------------ arithmetic (issue #24, item 3)
# cho2024, mcleish2024, zhou2024: exact match on addition beyond the training length, a method against the same
# model without it. A recipe may run as arms (`# reproduce.arm:` lines, scripts/reproduce.sh): one sweep per arm
# in RUN_DIR/ARM, read here as one table with an "arm" column.

def recipe_arms(config):
    """[(arm, overrides)] of the recipe's `# reproduce.arm: ARM [--set ...]` lines ([] for a one-sweep recipe)."""
    out = []
    for line in open(config):
        if line.startswith("# reproduce.arm:"):
            name, _, rest = line.split(":", 1)[1].strip().partition(" ")
            out.append((name, rest.strip()))
    return out


def read_arms(run_dir, config, reader):
    """reader(dir) over the recipe's arms, each row tagged with its arm; reader(run_dir) without arms."""
    arms = recipe_arms(config)
    if not arms:
        return reader(run_dir)
    rows = []
    for arm, _ in arms:
        part = reader(os.path.join(run_dir, arm))
        for r in part:
            r["arm"] = arm
        rows += part
    return rows


def median(v):
    s = sorted(v)
    n = len(s)
    return None if n == 0 else s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def arith_facts(rows, results, key, groups):
    """Per group (a value of `key`, e.g. arm or encoding.name): the competence gate on exact match at the largest
    training length, and per length beyond it the seeds' exact match: (mean, sample std, n), median, best, worst.
    -> (training length, lengths beyond, {group: facts})."""
    ind, ood = max(lengths(rows, True)), lengths(rows, False)
    kw = key.replace(".", "_", 1)
    facts = {}
    for g in groups:
        c = cell(rows, "exact_match", ind, **{kw: g})
        ok, thr = gate_accuracy(c)
        per = {}
        for L in [ind] + ood:
            v = seed_scores(results, "exact_match", [L], **{kw: g})
            per[L] = {"stats": mean_sd(v), "median": median(v), "best": max(v) if v else None,
                      "worst": min(v) if v else None, "seeds": v}
        facts[g] = {"cell": c, "gate": ok, "thr": thr, "per": per}
    return ind, ood, facts


def arith_table(ind, ood, facts, label):
    """Exact match (%) per group and length: mean ± sample std (seeds), and the median over seeds."""
    body = []
    for g, f in facts.items():
        row = [g, mean_std(f["cell"]) + ("" if f["gate"] else " ✗"), pct(f["thr"])]
        for L in ood:
            p = f["per"][L]
            m, sd, n = p["stats"]
            row.append("n/a" if m is None else f"{100 * m:.1f}" + ("" if sd is None else f" ± {100 * sd:.1f}")
                       + f" ({n}); median {100 * p['median']:.1f}")
        body.append(row)
    return (f"Exact match (%) at the largest training length {ind} (✗ = fails the competence gate, whose threshold is "
            f"the next column) and beyond it: mean ± sample std (seeds), and the median over seeds:\n\n"
            + md_table([label, f"{ind} (in dist.)", "gate: needs ≥"] + [str(L) for L in ood], body))


def extrapolation_claims(ind, ood, facts, method, baselines, bar, agg):
    """Claim A: the method's exact match, aggregated over seeds as the paper does (agg: 'median', 'best' or 'mean'),
    stays ≥ bar at every length beyond training up to `reach` (None: not even at the first). Claim B: beyond
    training the method is above each baseline that passes the gate, beyond the seed spread (separated at some
    length). -> dict with reach, the method's value per length, separated lengths per baseline, failed baselines."""
    f = facts[method]
    value = {L: (f["per"][L]["stats"][0] if agg == "mean" else f["per"][L][agg]) for L in ood}
    reach = None
    for L in ood:
        if value[L] is None or value[L] < bar:
            break
        reach = L
    sep, failed = {}, []
    for b in baselines:
        if not facts[b]["gate"]:
            failed.append(b)
            continue
        sep[b] = [L for L in ood if separated(f["per"][L]["stats"], facts[b]["per"][L]["stats"])]
    return {"reach": reach, "value": value, "sep": sep, "failed": failed, "ratio": None if reach is None else reach / ind}


def claims_word(method_gate, claims):
    """reproduces: A (reach beyond training) and B (separated from every comparable baseline); partly: one of them,
    or A with no comparable baseline; does not reproduce: neither; not comparable: the method failed the gate."""
    if not method_gate:
        return NOT_COMPARABLE
    a = claims["reach"] is not None
    b = bool(claims["sep"]) and all(claims["sep"].values())
    if a and b:
        return "reproduces"
    return "partly reproduces" if a or b else "does not reproduce"


def claims_text(ind, claims, method, bar, agg, facts=None):
    """The claims in words; when `facts` show the method failing the gate, that comes first."""
    gate = ""
    if facts is not None and not facts[method]["gate"]:
        f = facts[method]
        seeds = ", ".join(pct(x) for x in f["per"][ind]["seeds"])
        gate = (f"{method}'s exact match (%) at {ind} digits is {mean_std(f['cell'])} (seeds: {seeds}), below the "
                f"gate's {pct(f['thr'])}%; shown, not judged: ")
    ratio = "" if claims["reach"] is None else f", {claims['ratio']:.2f}x the training length"
    reach = ("below the bar already at the first length beyond training" if claims["reach"] is None
             else f"holds up to {claims['reach']} digits{ratio}")
    vals = ", ".join(f"{L}: {pct(v)}" for L, v in claims["value"].items())
    parts = [f"{gate}{method}'s exact match ({agg} over seeds; % at {vals}) ≥ {100 * bar:.0f}% {reach}"]
    for b, ls in claims["sep"].items():
        parts.append(f"above {b} beyond the seed spread at " + (", ".join(map(str, ls)) + " digits" if ls else "no length (tie)"))
    for b in claims["failed"]:
        parts.append(f"{b} fails the competence gate (not comparable: the model did not learn the task)")
    return "; ".join(parts)


def baselines_text(facts, method, ood):
    """Each baseline's median exact match (%) per length beyond training, marked when it fails the gate."""
    return "; ".join(f"{b}: median " + ", ".join(f"{pct(facts[b]['per'][L]['median'])} at {L}" for L in ood)
                     + ("" if facts[b]["gate"] else " (fails the competence gate: not compared)")
                     for b in facts if b != method)


ARITH_GATE = ("every group: {gate}; metric exact match (every answer digit and <EOS> right, greedy decoding) at "
              "{ind} digits. The method failing it makes the verdict not comparable; a baseline failing it is shown "
              "but not compared.")


def arith_checks(config, quick, ind, extra):
    return checks_text(ARITH_GATE.format(gate=GATE_ACC_TEXT, ind=ind),
                       TIE_TEXT + " (score: a seed's exact match at one length, from results.csv). " + extra,
                       budget_policy(config, quick))


def page_cho2024(run_dir, rows, config, quick):
    """Position coupling against the same model with plain (random-start) position ids: exact match beyond the
    training length, median over seeds as Cho et al.'s Figure 1."""
    results = read_arms(run_dir, config, read_results)
    ind, ood, facts = arith_facts(rows, results, "arm", values_of(rows, "arm"))
    claims = extrapolation_claims(ind, ood, facts, "coupled", [g for g in facts if g != "coupled"], 0.95, "median")
    word = claims_word(facts["coupled"]["gate"], claims)
    verdict = (f"Cho et al.'s position-coupling claim {word} at toy scale (trained on 1..{ind} digits, tested up to "
               f"{max(ood)}; the paper: 1..30 digits, ≥ 95% up to 200, 6.67x): "
               + claims_text(ind, claims, "coupled", 0.95, "median", facts) + "." + provisional(rows))
    comparison = md_table(["", "Cho et al. 2024 (Figure 1; medians over runs)", "pelab (median over seeds)"],
                          [["trained on", "1..30 digits", f"1..{ind} digits"],
                           ["coupling: ≥ 95% exact match up to", "200 digits (6.67x)",
                            f"not reached (median {pct(claims['value'][ood[0]])}% at {ood[0]} digits)" if claims["reach"] is None
                            else f"{claims['reach']} digits ({claims['ratio']:.2f}x)"],
                           ["without coupling (paper: Figure 1's baselines, NoPE among them; pelab: the same table on "
                            "ids 0..T-1)", "fail beyond the training lengths",
                            baselines_text(facts, "coupled", ood)]])
    tables = arith_table(ind, ood, facts, "arm")
    extra = ("Reproduces: the coupled arm's median exact match ≥ 95% at the first length(s) beyond training, and "
             "the coupled arm separated above the baseline at some length beyond training; partly: one of the two.")
    return verdict, comparison, tables, arith_checks(config, quick, ind, extra)


def page_mcleish2024(run_dir, rows, config, quick):
    """Abacus embeddings against the same model without them (NoPE attention in both): exact match beyond the
    training length; the paper's headline is its best model ("up to 99%"), so claim A takes the best seed."""
    results = read_results(run_dir)
    ind, ood, facts = arith_facts(rows, results, "encoding.name", values_of(rows, "encoding.name"))
    if "abacus" not in facts:
        raise PageError("summary.csv has no encoding.name = abacus")
    claims = extrapolation_claims(ind, ood, facts, "abacus", [g for g in facts if g != "abacus"], 0.99, "best")
    word = claims_word(facts["abacus"]["gate"], claims)
    med = ", ".join(f"{L}: {pct(facts['abacus']['per'][L]['median'])}" for L in ood)
    verdict = (f"McLeish et al.'s Abacus claim {word} at toy scale (trained on 1..{ind} digits, tested up to "
               f"{max(ood)}; the paper: 20 digits, up to 99% at 100): "
               + claims_text(ind, claims, "abacus", 0.99, "best", facts) + f"; abacus median over seeds {med}."
               + provisional(rows))
    comparison = md_table(["", "McLeish et al. 2024 (abstract, Figure 1)", "pelab"],
                          [["trained on", "operands of up to 20 digits", f"operands of 1..{ind} digits"],
                           ["Abacus: exact match beyond training", "up to 99% on 100-digit addition (5x; their best model)",
                            "best seed " + ", ".join(f"{L}: {pct(claims['value'][L])}" for L in ood)],
                           ["without Abacus (pelab: the same model, NoPE)", "lower beyond the training length (Figure 1, left: "
                            "earlier state-of-the-art embeddings)",
                            baselines_text(facts, "abacus", ood)]])
    extra = ("Reproduces: the best Abacus seed ≥ 99% exact match at the first length(s) beyond training (the paper's "
             "'up to 99%' is its best model), and Abacus separated above the model without it at some length beyond "
             "training; partly: one of the two.")
    return verdict, comparison, arith_table(ind, ood, facts, "encoding"), arith_checks(config, quick, ind, extra)


ZHOU_SPREAD = 0.20  # "not robust": at some length beyond training the seeds' exact match spans ≥ 20 points


def page_zhou2024(run_dir, rows, config, quick):
    """FIRE + randomized positions + reversed output + index hints against RoPE on the same format: the best seed
    beyond the training length (their Figure 1 is their best run), the comparison with RoPE, and the spread over
    seeds (their claim: length generalization is not robust to the seed)."""
    results = read_arms(run_dir, config, read_results)
    arms = values_of(rows, "arm")
    method = arms[0]
    ind, ood, facts = arith_facts(rows, results, "arm", arms)
    claims = extrapolation_claims(ind, ood, facts, method, arms[1:], 0.98, "best")
    word = claims_word(facts[method]["gate"], claims)
    f = facts[method]["per"]
    spread = {L: None if f[L]["best"] is None else f[L]["best"] - f[L]["worst"] for L in ood}
    spread_ind = None if f[ind]["best"] is None else f[ind]["best"] - f[ind]["worst"]
    wide = [L for L in ood if spread[L] is not None and spread[L] >= ZHOU_SPREAD]
    robust = ("not comparable" if not facts[method]["gate"] else
              f"seeds span ≥ {100 * ZHOU_SPREAD:.0f} points at {', '.join(map(str, wide))} digits (not robust, as the paper)"
              if wide else f"seeds span < {100 * ZHOU_SPREAD:.0f} points at every length beyond training")
    verdict = (f"Zhou et al.'s claim {word} at toy scale (trained on 1..{ind} digits, tested up to {max(ood)}; the "
               f"paper: 40 digits, > 98% at 100 with its best run): "
               + claims_text(ind, claims, method, 0.98, "best", facts) + f". Robustness: {robust}." + provisional(rows))
    fmt_spread = lambda L: "n/a" if spread.get(L) is None else f"{100 * spread[L]:.1f} points"
    comparison = md_table(["", "Zhou et al. 2024 (Figure 1; abstract)", "pelab"],
                          [["trained on", "1..40 digits", f"1..{ind} digits"],
                           ["FIRE + randomized + reversed + index hints, best run", "> 98% exact match at 100 digits (2.5x)",
                            ", ".join(f"{L}: {pct(claims['value'][L])}" for L in ood)],
                           ["the same format with RoPE", "fails beyond the training length",
                            baselines_text(facts, method, ood)],
                           ["spread over seeds", "large variance across weight-initialization and data-order seeds",
                            f"best − worst seed: {fmt_spread(ind) if spread_ind is None else f'{100 * spread_ind:.1f} points'} "
                            f"at {ind} (in dist.); " + ", ".join(f"{L}: {fmt_spread(L)}" for L in ood)]])
    extra = ("Reproduces: the best seed of the method ≥ 98% exact match at the first length(s) beyond training, and "
             "the method separated above RoPE at some length beyond training; partly: one of the two. The robustness "
             f"claim is reported beside it (best − worst seed ≥ {100 * ZHOU_SPREAD:.0f} points at some length beyond "
             "training) and does not change the verdict word.")
    return verdict, comparison, arith_table(ind, ood, facts, "arm"), arith_checks(config, quick, ind, extra)


# ------------------------------------------------------------------------ Chomsky hierarchy (issue #24, item 3)
# deletang: Delétang et al. 2023 (arXiv 2207.02098) and Ruoss et al. 2023 (arXiv 2305.16843) on the 15 tasks of the
# suite in the blank output format. A run (one seed x one learning rate) scores its token accuracy averaged over the
# sizes above training (eval.json's "ood", the papers' score); a group (task x encoding x positions) aggregates its
# runs as the papers' tables do, the max, with the mean beside it.

CHOMSKY_LEVEL = {"even_pairs": "R", "modular_arithmetic": "R", "parity_check": "R", "cycle_navigation": "R",
                 "stack_manipulation": "DCF", "reverse_string": "DCF", "modular_arithmetic_brackets": "DCF",
                 "solve_equation": "DCF"}  # the suite's other seven tasks are context-sensitive (docs/tasks.md)
RUOSS_GAIN = 0.12  # Ruoss et al.'s abstract: randomized positions raise test accuracy by 12.0 points on average
MODES = ("contiguous", "randomized")


def run_scores(results, metric, lens, **group):
    """Per run, keyed (seed, learning rate): the mean of `metric` over the eval lengths `lens` (a run missing one of
    them is left out). results.csv rows; group keys given with '.' as '_'."""
    by_run = {}
    for r in results:
        if r["metric"] != metric or int(r["eval_len"]) not in lens or r["value"] == "":
            continue
        if all(r.get(k.replace("_", ".", 1)) == v for k, v in group.items()):
            by_run.setdefault((r["seed"], r.get("train.lr", "")), {})[int(r["eval_len"])] = float(r["value"])
    return {k: sum(v.values()) / len(v) for k, v in by_run.items() if len(v) == len(lens)}


def deletang_groups(rows, results):
    """Per (task, encoding, positions): the competence gate on the token accuracy at the largest training size (the
    best learning rate's mean over seeds: the papers pick the best learning rate too); the max of the OOD score over
    every run (seeds x learning rates, the papers' aggregation); the best learning rate's OOD score per seed and its
    (mean, sample std, n); the mean chance level over the OOD sizes."""
    ind, ood = max(lengths(rows, True)), lengths(rows, False)
    lrs = values_of(rows, "train.lr") or [None]
    out = {}
    for task in values_of(rows, "task.name"):
        for enc in values_of(rows, "encoding.name"):
            for pos in values_of(rows, "train.positions"):
                kw = {"task_name": task, "encoding_name": enc, "train_positions": pos}
                by_lr = [cell(rows, "token_acc", ind, **kw, **({} if lr is None else {"train_lr": lr})) for lr in lrs]
                best = max((c for c in by_lr if c is not None and c["mean"] is not None), key=lambda c: c["mean"],
                           default=None)
                ok, thr = gate_accuracy(best)
                first = {} if lrs[0] is None else {"train_lr": lrs[0]}
                chance = [c["chance"] for c in (cell(rows, "token_acc", L, **kw, **first) for L in ood)
                          if c is not None and c["chance"] is not None]
                every = run_scores(results, "token_acc", ood, **kw)
                lr = None if best is None else best.get("train.lr")
                runs = {s: v for (s, r), v in every.items() if lr is None or r == lr}  # the best lr's seeds
                out[(task, enc, pos)] = {"cell": best, "gate": ok, "thr": thr, "runs": runs, "lr": lr,
                                         "max": max(every.values(), default=None), "stats": mean_sd(list(runs.values())),
                                         "chance": sum(chance) / len(chance) if chance else None}
    return out


def deletang_gain(groups, tasks, encs):
    """Claim A (Ruoss et al.): randomized − contiguous beyond the training length, averaged over the (task, encoding)
    pairs whose two groups pass the gate (NoPE is left out: it reads no ids, so it is the control). The gain of the
    max (the papers' aggregation) and of the mean; the seed-level test compares, per seed (each group at its best
    learning rate), the average over those pairs of randomized against contiguous. Holds: separated and a gain of the max ≥ half the
    paper's +12.0 points; half: separated and a positive gain below that."""
    pairs = [(t, e) for t in tasks for e in encs if e != "none"
             and all(groups[(t, e, p)]["gate"] and groups[(t, e, p)]["max"] is not None for p in MODES)]
    if not pairs:
        return None
    avg = lambda f: sum(f(t, e) for t, e in pairs) / len(pairs)
    gain_max = avg(lambda t, e: groups[(t, e, "randomized")]["max"] - groups[(t, e, "contiguous")]["max"])
    gain_mean = avg(lambda t, e: groups[(t, e, "randomized")]["stats"][0] - groups[(t, e, "contiguous")]["stats"][0])
    common = set.intersection(*(set(groups[(t, e, p)]["runs"]) for t, e in pairs for p in MODES))
    rep = {p: mean_sd([avg(lambda t, e: groups[(t, e, p)]["runs"][k]) for k in sorted(common)]) for p in MODES}
    sep = separated(rep["randomized"], rep["contiguous"])
    held = 1 if sep and gain_max >= RUOSS_GAIN / 2 else 0.5 if sep and gain_max > 0 else 0
    per_pair = [(t, e) for t, e in pairs if separated(groups[(t, e, "randomized")]["stats"], groups[(t, e, "contiguous")]["stats"])]
    return {"pairs": pairs, "gain_max": gain_max, "gain_mean": gain_mean, "rep": rep, "sep": sep, "held": held,
            "sep_pairs": per_pair}


def deletang_levels(groups, tasks, encs):
    """Claim B (Delétang et al.): with contiguous ids no non-regular task generalizes. A (task, encoding) that passes
    the gate generalizes when its seeds' OOD mean − sample std reaches the bar chance + 0.8 × (1 − chance) (the gate's
    rule, beyond the training length), fails when even their max is below it, and is unclear (seeds) otherwise.
    Holds: every comparable non-regular pair fails; half: none generalizes but some are unclear."""
    status = {}
    for t in tasks:
        for e in encs:
            g = groups[(t, e, "contiguous")]
            if not g["gate"] or g["max"] is None:
                continue
            bar = gate_threshold(g["chance"])
            m, sd, n = g["stats"]
            status[(t, e)] = ("generalizes" if n >= 2 and m - sd >= bar else "fails" if g["max"] < bar
                              else "unclear (seeds)")
    nonreg = [k for k in status if CHOMSKY_LEVEL.get(k[0], "CS") != "R"]
    if not nonreg:
        return {"status": status, "held": None, "nonreg": []}
    gen = [k for k in nonreg if status[k] == "generalizes"]
    unclear = [k for k in nonreg if status[k] == "unclear (seeds)"]
    return {"status": status, "nonreg": nonreg, "gen": gen, "unclear": unclear,
            "held": 0 if gen else 0.5 if unclear else 1}


def deletang_table(groups, tasks, encs, ind, ood):
    """Per task × encoding: the gate for both position modes and the OOD token accuracy (max, mean ± std over runs)."""
    fmt = lambda g: ("n/a" if g["max"] is None else f"{pct(g['max'])} / {pct(g['stats'][0])}"
                     + ("" if g["stats"][1] is None else f" ± {pct(g['stats'][1])}") + f" ({g['stats'][2]})")
    body = []
    for t in tasks:
        for e in encs:
            c, r = groups[(t, e, "contiguous")], groups[(t, e, "randomized")]
            both = c["gate"] and r["gate"] and c["max"] is not None and r["max"] is not None
            state = ("not comparable (gate)" if not both else "gain" if separated(r["stats"], c["stats"])
                     else "loss" if separated(c["stats"], r["stats"]) else "tie (seeds)")
            body.append([t, CHOMSKY_LEVEL.get(t, "CS"), e, mean_std(c["cell"]) + ("" if c["gate"] else " ✗"),
                         mean_std(r["cell"]) + ("" if r["gate"] else " ✗"), pct(c["thr"] or r["thr"]), fmt(c), fmt(r),
                         "n/a" if not both else f"{100 * (r['max'] - c['max']):+.1f}", state])
    return (f"Token accuracy (%). In distribution: size {ind}, the best learning rate's mean ± sample std over seeds "
            "(✗ = fails the competence gate, whose threshold is the next column). Beyond training: each run's (seed × "
            f"learning rate) token accuracy averaged over sizes {ood[0]}–{ood[-1]}, shown as the max over every run (the "
            "papers' aggregation) / the mean ± sample std over the seeds of the best learning rate (seeds). Gain = "
            "randomized − contiguous of the max, in points; the last column applies the tie rule to the seeds' scores:\n\n"
            + md_table(["task", "level", "encoding", "in-dist contiguous", "in-dist randomized", "gate: needs ≥",
                        "OOD contiguous: max / mean", "OOD randomized: max / mean", "gain (max, points)", "seeds"], body))


DELETANG_MISSING = ("not found in a stored primary source (the per-task tables, Delétang et al.'s Table 2 and Ruoss et "
                    "al.'s Table 1, could not be read from the papers here), so not cited")


def deletang_claim_texts(gain, levels, groups, tasks):
    """The two claims in words, and the NoPE control (its ids are unused, so its gain should be nil)."""
    if gain is None:
        a = "not comparable: no (task, encoding) pair passes the gate in both position modes"
    else:
        rr, rc = gain["rep"]["randomized"], gain["rep"]["contiguous"]
        sd = lambda s: "" if s[1] is None else f" ± {100 * s[1]:.1f}"
        on = list(dict.fromkeys(t for t, _ in gain["pairs"]))
        a = (f"gain of the max {100 * gain['gain_max']:+.1f} points (of the mean {100 * gain['gain_mean']:+.1f}) over "
             f"{len(gain['pairs'])} pair(s) on {len(on)} of {len(tasks)} tasks ({', '.join(on)}); per seed, the pairs' average is {pct(rr[0])}{sd(rr)} randomized against "
             f"{pct(rc[0])}{sd(rc)} contiguous ({rr[2]} seeds): " + ("separated" if gain["sep"] else "a tie (seeds)")
             + f"; {len(gain['sep_pairs'])} pair(s) with a gain the seeds separate")
    if levels["held"] is None:
        b = "not comparable: no non-regular task passes the gate with contiguous ids"
    else:
        st = levels["status"]
        b = (f"{len(levels['nonreg'])} non-regular task × encoding pair(s) pass the gate with contiguous ids: "
             + ", ".join(f"{t} × {e} {st[(t, e)]}" for t, e in levels["nonreg"])
             + "; regular pairs that generalize: "
             + (", ".join(f"{t} × {e}" for (t, e), s in st.items() if CHOMSKY_LEVEL.get(t) == "R" and s == "generalizes")
                or "none"))
    ctrl = [groups[(t, "none", p)]["max"] for t in tasks for p in MODES if (t, "none", p) in groups]
    control = "n/a"
    if ctrl and None not in ctrl:
        diffs = [groups[(t, "none", "randomized")]["max"] - groups[(t, "none", "contiguous")]["max"] for t in tasks]
        control = f"randomized − contiguous of the max {100 * sum(diffs) / len(diffs):+.1f} points on average over {len(tasks)} tasks"
    return a, b, control


def page_deletang(run_dir, rows, config, quick):
    """Ruoss et al.'s randomized-positions gain (claim A) and Delétang et al.'s failure of transformers on non-regular
    tasks (claim B) on the Chomsky-hierarchy suite, after the competence gate per task × encoding × positions."""
    results = read_results(run_dir)
    ind, ood = max(lengths(rows, True)), lengths(rows, False)
    tasks, encs = values_of(rows, "task.name"), values_of(rows, "encoding.name")
    groups = deletang_groups(rows, results)
    gain, levels = deletang_gain(groups, tasks, encs), deletang_levels(groups, tasks, encs)
    judged = [h for h in (None if gain is None else gain["held"], levels["held"]) if h is not None]
    word = NOT_COMPARABLE if not judged else verdict_word(sum(judged), 2)
    a, b, control = deletang_claim_texts(gain, levels, groups, tasks)
    skipped = 2 - len(judged)
    verdict = (f"Delétang et al.'s and Ruoss et al.'s length-generalization claims on the Chomsky-hierarchy suite, at toy "
               f"scale (trained on sizes 1..{ind}, tested on {ood[0]}..{ood[-1]}; the papers: 1..40 and 41..500): "
               f"{word.removeprefix('is ')}; "
               f"(A) randomized positions raise the OOD token accuracy: {a}; (B) with contiguous ids no non-regular task "
               f"generalizes: {b}" + (f"; {skipped} claim(s) not comparable (the competence gate)" if skipped else "")
               + "." + provisional(rows))
    comparison = md_table(
        ["claim", "the papers", "pelab (token accuracy, sizes " + f"{ood[0]}–{ood[-1]})"],
        [["(A) randomized − contiguous beyond the training length, averaged over tasks and encodings",
          "+12.0 points (Ruoss et al. 2023, abstract; 6000 models, 15 tasks, accuracy over sizes 41–500)", a],
         ["(B) transformers fail on non-regular tasks",
          "\"RNNs and Transformers fail to generalize on non-regular tasks\" (Delétang et al. 2023, abstract; "
          "20 910 models, 15 tasks)", b],
         ["per task and encoding (Delétang et al. Table 2, Ruoss et al. Table 1)", DELETANG_MISSING,
          "the table below"],
         ["NoPE control (reads no ids)", "—", control]])
    checks = checks_text(
        f"every task × encoding × positions group: {GATE_ACC_TEXT}; metric token accuracy at size {ind}, the best "
        "learning rate's mean over seeds. A pair enters claim A only when both of its groups pass; claim B reads only "
        "the contiguous groups that pass. The papers' per-run score is then compared as they aggregate it: the max over "
        "seeds × learning rates, the mean beside it.",
        TIE_TEXT + " (score: a seed's token accuracy averaged over the sizes beyond training, from results.csv, at "
                   "the group's best learning rate by the gate's in-distribution accuracy). Claim A holds when, per "
                   "seed, the comparable pairs' average "
                   "is separated above with randomized ids and the gain of the max is ≥ +6.0 points (half the paper's "
                   "+12.0; a separated smaller positive gain counts half). Claim B holds when no comparable non-regular "
                   "task × encoding generalizes (seeds' mean − std ≥ chance + 0.8 × (1 − chance) beyond training) and "
                   "each one's max stays below that bar (some between: half). Reproduces: both hold; partly "
                   "reproduces: one, or halves; does not reproduce: neither (a claim not comparable counts as not "
                   "held); not comparable: neither claim has a group that passes the gate.",
        budget_policy(config, quick))
    return verdict, comparison, deletang_table(groups, tasks, encs, ind, ood), checks


# Recipes whose report's main plot is not copied beside the page: one axes for every group is unreadable there.
NO_MAIN_PLOT = {"deletang": "The report's main plot (one curve per task × encoding × positions, 150 of them) is not "
                            "copied here; `report.html` in the run directory has one plot per group "
                            "(`plots/beyond_*.png`)."}

RECIPES = {
    "format": ("NoPE and the sequence format (a finding of our own)", page_format),
    "ruoss": ("Ruoss et al. 2023, randomized positional encodings", page_ruoss),
    "press": ("Press et al. 2022, ALiBi: train short, test long", page_press),
    "kazemnejad": ("Kazemnejad et al. 2023, positional encodings and length generalization", page_kazemnejad),
    "cho2024": ("Cho et al. 2024, position coupling for addition", page_cho2024),
    "mcleish2024": ("McLeish et al. 2024, Abacus embeddings for addition", page_mcleish2024),
    "zhou2024": ("Zhou et al. 2024, FIRE, randomized positions and index hints for addition", page_zhou2024),
    "deletang": ("Delétang et al. 2023 and Ruoss et al. 2023, the Chomsky-hierarchy suite", page_deletang),
}


def write_page(name, run_dir, config, quick, out, copy=None):
    if name not in RECIPES:
        raise PageError(f"unknown recipe '{name}'; known: {', '.join(RECIPES)}")
    title, fn = RECIPES[name]
    rows = read_arms(run_dir, config, read_summary)
    verdict, comparison, tables, checks = fn(run_dir, rows, config, quick)
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
    arms = [a for a, _ in recipe_arms(config)]
    base = os.path.basename(os.path.normpath(run_dir))
    sources = ", ".join(f"{base}/{a}/summary.csv" for a in arms) if arms else f"{base}/summary.csv"
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

## What the verdict checks first

{checks}

## The claim, the paper's numbers and pelab's

{comparison}

## pelab's numbers

{tables}

{{plot}}All numbers come from `{sources}` (and {'their' if arms else 'its'} eval.json / steps_to_target.csv); the
full report with plots is `report.html` in the run directory{' of each arm' if arms else ''}. The verdict's thresholds are in
`scripts/reproduce_page.py` (page_{name}).
"""
    # The report's main plot (one per arm): linked from the run directory's page, copied beside the page's copy.
    plots = []  # (sub-directory of run_dir, "" without arms; the plot's file name)
    for sub in [a for a, _ in recipe_arms(config)] or [""]:
        plot = next((p for p in ("loss_by_position.png", "length_generalization.png")
                     if os.path.isfile(os.path.join(run_dir, sub, "plots", p))), None)
        if plot and name not in NO_MAIN_PLOT:
            plots.append((sub, plot))
    caption = lambda sub, plot: f"{sub}: {plot}" if sub else plot
    note = f"{NO_MAIN_PLOT[name]}\n\n" if name in NO_MAIN_PLOT else ""
    pages = [(out, note + "".join(f"![{caption(sub, p)}]({os.path.join(sub, 'plots', p)})\n\n" for sub, p in plots))]
    if copy:
        stem = os.path.splitext(os.path.basename(copy))[0]
        links = ""
        for sub, p in plots:
            png = stem + (f".{sub}" if sub else "") + "." + p
            links += f"![{caption(sub, p)}]({png})\n\n"
            shutil.copyfile(os.path.join(run_dir, sub, "plots", p), os.path.join(os.path.dirname(copy) or ".", png))
        pages.append((copy, note + links))
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
