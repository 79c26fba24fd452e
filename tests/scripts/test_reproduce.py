#!/usr/bin/env python3
"""Tests of scripts/reproduce.sh and the verdict module pelab.reproduce (python/pelab/reproduce/), without training:
every recipe config (and its quick variant) loads and validates in pelab; the rules compute each recipe's verdict
from fake run directories made to agree and to disagree with the paper; bad names and inputs exit 2 with a message.
The new rules of issue #44 (null rates, n-gram gate, reach fraction, stability, provenance) and the sweep check of
issue #38 are in test_reproduce_rules.py.

usage: test_reproduce.py PELAB_BINARY
"""
import csv
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPES_DIR = os.path.join(ROOT, "experiments", "reproduce")
sys.path.insert(0, os.path.join(ROOT, "python"))
from pelab.reproduce import common, ngram, page as rpage, protocol, stats, sweep  # noqa: E402
from pelab.reproduce.recipes import RECIPES  # noqa: E402
from pelab.reproduce import robust  # noqa: E402

robust.RESAMPLES = 200  # the fake pages' words, not their stability, are tested here (test_reproduce_rules.py: 1000)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def write_runs(d, keys, cells):
    """cells: (group values tuple, length, in_dist, metric, [value per seed], chance). Writes summary.csv (mean, sample
    std, n per cell, as `pelab report`) and results.csv (one row per seed)."""
    with open(os.path.join(d, "summary.csv"), "w", newline="") as f, \
            open(os.path.join(d, "results.csv"), "w", newline="") as g:
        w, r = csv.writer(f), csv.writer(g)
        w.writerow(list(keys) + ["length", "in_distribution", "metric", "mean", "std", "n", "n_na", "chance"])
        r.writerow(["run"] + list(keys) + ["seed", "task", "train_len", "eval_len", "in_distribution", "metric", "value",
                                          "chance", "na_reason"])
        for vals, length, ind, metric, values, chance in cells:
            n = len(values)
            mean = sum(values) / n
            std = (sum((x - mean) ** 2 for x in values) / (n - 1)) ** 0.5 if n > 1 else 0.0
            ind_s = "true" if ind else "false"
            # A decoy metric beside each row: the page must pick its metric, not the first row of a length.
            w.writerow(list(vals) + [length, ind_s, "decoy", repr(1 - mean), "0", n, 0, ""])
            w.writerow(list(vals) + [length, ind_s, metric, repr(mean), repr(std), n, 0, "" if chance is None else repr(chance)])
            for seed, v in enumerate(values):
                r.writerow(["r"] + list(vals) + [seed, "t", 8, length, ind_s, "decoy", repr(1 - v), "", ""])
                r.writerow(["r"] + list(vals) + [seed, "t", 8, length, ind_s, metric, repr(v),
                                                 "" if chance is None else repr(chance), ""])


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(v) if isinstance(v, str) else repr(v)


def fake_sweep_toml(d, name, quick, arm_sets=""):
    """d/sweep.toml as `pelab sweep` would resolve the recipe with the variant's and the arm's overrides."""
    config = os.path.join(RECIPES_DIR, name + ".toml")
    flat = sweep.flatten(common.load_config(config))
    flat.update(sweep.parse_sets(arm_sets + " " + (common.quick_overrides(config) if quick else "")))
    sections = {}
    for k, v in flat.items():
        sections.setdefault(k[:-1], []).append(f"{json.dumps(k[-1])} = {toml_value(v)}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "sweep.toml"), "w") as f:
        for sec, lines in sections.items():
            f.write(("[" + ".".join(json.dumps(x) for x in sec) + "]\n" if sec else "") + "\n".join(lines) + "\n\n")


def fake_validation(t, metric):
    """Runs for a recipe with [protocol] select: each run's validation value is its in-distribution `metric` (the
    fake sweeps have no run directories; test_reproduce_protocol.py tests the real records)."""
    L = max(t.lengths(True))
    return [{"group": g, "seed": s, "cell": None, "steps": 100, "status": "finished", "validation_metric": metric,
             "validation": v, "curves": {}}
            for g in t.groups for s, v in t.vals.get((g, metric, L), {}).items()]


def page(name, d, quick=0):
    out = os.path.join(d, "RESULT.md")
    config = os.path.join(RECIPES_DIR, name + ".toml")
    t = sweep.read_sweep(name, d, config)
    runs = fake_validation(t, "token_acc") if protocol.selected_keys(config) else None
    v = rpage.write_page(name, t, config, quick, out, runs=runs)
    text = open(out).read()
    check(v in text and "**Verdict:**" in text, f"{name}: the page carries the verdict")
    check("**Competence gate**" in text and "**Budget policy**" in text and "**Ties**" in text,
          f"{name}: the page states its gate, tie rule and budget policy")
    return v


def fake_format(d, good, ind=0.995, seeds=3):
    keys = ["task.bos", "task.eos"]
    rows, steps = [], []
    for bos in ("true", "false"):
        for eos in ("scored", "absent"):
            acc2 = {("true", "scored"): 0.21, ("true", "absent"): 0.65, ("false", "scored"): 0.3, ("false", "absent"): 0.5}
            a = acc2[(bos, eos)] if good else 0.1
            rows += [((bos, eos), 16, True, "token_acc", [ind - 0.001, ind + 0.001, ind][:seeds], 0.15),
                     ((bos, eos), 32, False, "token_acc", [a - 0.02, a + 0.02, a][:seeds], 0.13)]
            for seed in range(seeds):
                s = (500 if bos == "true" else 1000) if good else 800
                steps.append([bos, eos, "r", seed, "finished", s, 100, 3000, "token_acc", 0.99, s, "true"])
    write_runs(d, keys, rows)
    with open(os.path.join(d, "steps_to_target.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys + ["run", "seed", "status", "steps", "eval_every", "step_limit", "target_metric", "target",
                           "steps_to_target", "reached"])
        w.writerows(steps)


def fake_ruoss(d, gain, ind_randomized=0.99, spread=0.0):
    rows = []
    for task in ("copy", "reverse"):
        for enc in ("learned", "sinusoidal", "rope"):
            for pos in ("contiguous", "randomized"):
                v = (task, enc, pos)
                rows.append((v, 8, True, "token_acc", [ind_randomized if pos == "randomized" else 0.99] * 3, 0.1))
                for L in (16, 32):
                    m = 0.3 + (gain if pos == "randomized" else 0)
                    rows.append((v, L, False, "token_acc", [m - spread, m, m + spread], 0.1))
    write_runs(d, ["task.name", "encoding.name", "train.positions"], rows)


def fake_press(d, alibi_rise, sin_rise, alibi_loss=2.0, rope_rise=0.1):
    rows = []
    for enc, rise in (("sinusoidal", sin_rise), ("rope", rope_rise), ("alibi", alibi_rise)):
        inside = alibi_loss if enc == "alibi" else 2.0
        rows += [((enc,), 64, True, "loss", [inside] * 3, None), ((enc,), 256, False, "loss", [inside * (1 + rise)] * 3, None)]
        for seed in range(3):
            run = os.path.join(d, f"encoding.name={enc},train.seed={seed}")
            os.makedirs(run)
            # falling inside the context (0-32 above 32-64, by more than a 4-gram's own fall), flat or rising past it
            buckets = [{"from": a, "to": a + 32, "loss": inside + 0.3 if a < 32 else inside if a < 64 else inside * (1 + rise)}
                       for a in range(0, 256, 32)]
            res = [{"length": 64, "status": "ok", "buckets": buckets[:2]}, {"length": 256, "status": "ok", "buckets": buckets}]
            with open(os.path.join(run, "eval.json"), "w") as f:
                json.dump({"assignment": {"encoding.name": enc, "train.seed": seed}, "results": res}, f)
    write_runs(d, ["encoding.name"], rows)


def fake_kazemnejad(d, order, chance=0.0, spread=0.0, unlearned=()):
    """order: encodings best first; a task's exact match beyond 2L follows it on every task (0.5, 0.4, ...), with
    seeds at -spread, 0, +spread; (task, encoding) pairs in `unlearned` have 0.3 exact match in distribution."""
    rows = []
    for task in ("copy", "reverse", "addition", "sort", "parity"):
        for i, enc in enumerate(order):
            rows.append(((task, enc), 8, True, "exact_match", [0.3 if (task, enc) in unlearned else 1.0] * 3, 0.0))
            for L in (12, 16):
                m = 0.5 - 0.1 * i
                rows.append(((task, enc), L, False, "exact_match", [m - spread, m, m + spread], chance))
    write_runs(d, ["task.name", "encoding.name"], rows)


ARITH_OOD = (10, 12, 16)


def arith_cells(ind, ood, spread, vals=()):
    """Exact match 8 (in distribution, 3 seeds at `ind`) and at ARITH_OOD (seeds at ood - spread, ood, ood + spread)."""
    cells = [(vals, 8, True, "exact_match", [ind] * 3, 1e-8)]
    return cells + [(vals, L, False, "exact_match", [ood - spread, ood, ood + spread], 1e-8) for L in ARITH_OOD]


def fake_arms(d, arms):
    """arms: {arm: (ind, ood, spread)}; one sweep directory per arm, as scripts/reproduce.sh writes them."""
    for arm, (ind, ood, spread) in arms.items():
        os.makedirs(os.path.join(d, arm))
        write_runs(os.path.join(d, arm), [], arith_cells(ind, ood, spread))


def fake_mcleish(d, abacus, none, spread=0.0):
    write_runs(d, ["encoding.name"], arith_cells(1.0, abacus, spread, ("abacus",)) + arith_cells(1.0, none, spread, ("none",)))


def test_arithmetic(fresh, tmp):
    """cho2024, mcleish2024, zhou2024: the gate, claim A (the bar beyond training), claim B (above the baseline
    beyond the seed spread), on fake run directories."""
    fake_arms(fresh("c1"), {"coupled": (1.0, 0.97, 0.01), "baseline": (1.0, 0.0, 0.0)})
    v = page("cho2024", os.path.join(tmp, "c1"))
    check("claim partly reproduces" in v and "holds up to 16 digits, 2.00x the training length, 0.30 of the paper's 6.67x"
          in v and "A counts half" in v and "above baseline beyond the seed spread" in v and ": yes" in v,
          f"cho2024: coupled ≥ 95% to 2x and above the baseline: 2x of the paper's 6.67x is at most partly ({v})")
    fake_arms(fresh("c2"), {"coupled": (1.0, 0.5, 0.01), "baseline": (1.0, 0.0, 0.0)})
    v = page("cho2024", os.path.join(tmp, "c2"))
    check("partly reproduces" in v and "below the bar already" in v, f"cho2024: above the baseline, below 95% -> partly ({v})")
    fake_arms(fresh("c3"), {"coupled": (0.5, 0.97, 0.0), "baseline": (1.0, 0.0, 0.0)})
    v = page("cho2024", os.path.join(tmp, "c3"))
    check("not comparable: the model did not learn the task" in v and "at 8 digits is 50.0 ± 0.0 (3) (seeds: 50.0, 50.0, 50.0), below the gate's 80.0%" in v,
          f"cho2024: coupled below the gate -> not comparable, with its numbers ({v})")
    fake_arms(fresh("c4"), {"coupled": (1.0, 0.5, 0.4), "baseline": (1.0, 0.3, 0.0)})
    v = page("cho2024", os.path.join(tmp, "c4"))
    check("does not reproduce" in v and "no (tie)" in v, f"cho2024: inside the seed spread -> tie ({v})")
    fake_arms(fresh("c5"), {"coupled": (1.0, 0.97, 0.01), "baseline": (0.3, 0.0, 0.0)})
    v = page("cho2024", os.path.join(tmp, "c5"))
    check("partly reproduces" in v and "baseline fails the competence gate" in v,
          f"cho2024: a baseline that did not learn is not compared ({v})")
    text = open(os.path.join(tmp, "c5", "RESULT.md")).read()
    check("median 97.0" in text and "| baseline | 30.0" in text and "(fails the competence gate: not compared)" in text,
          "cho2024: the table has each arm's medians and gate; the comparison marks the baseline that failed it")

    fake_mcleish(fresh("m1"), 0.995, 0.02, spread=0.004)
    v = page("mcleish2024", os.path.join(tmp, "m1"))
    check("claim partly reproduces" in v and "99.9" in v and "0.40 of the paper's 5.00x" in v,
          f"mcleish2024: best seed ≥ 99% to 2x and above NoPE: 2x of the paper's 5x is partly ({v})")
    fake_mcleish(fresh("m2"), 0.2, 0.02, spread=0.3)
    v = page("mcleish2024", os.path.join(tmp, "m2"))
    check("does not reproduce" in v, f"mcleish2024: below the bar and inside the spread -> does not reproduce ({v})")

    fake_arms(fresh("z1"), {"fire_randomized": (1.0, 0.6, 0.39), "rope": (1.0, 0.0, 0.0)})
    v = page("zhou2024", os.path.join(tmp, "z1"))
    check("claim is unstable" in v and "the seeds as run give: reproduces" in v and "0.80 of the paper's 2.50x" in v
          and "not robust" in v and "seeds span ≥ 20 points at 10, 12, 16" in v,
          f"zhou2024: best seed 99% to 2x (0.8 of 2.5x), separated from RoPE, wide spread -> reproduces as run, but "
          f"a third of the resamples of 3 seeds say partly: unstable ({v})")
    fake_arms(fresh("z2"), {"fire_randomized": (0.0, 0.0, 0.0), "rope": (1.0, 0.0, 0.0)})
    v = page("zhou2024", os.path.join(tmp, "z2"))
    check("not comparable: the model did not learn the task" in v and "Robustness: not comparable" in v,
          f"zhou2024: FIRE that did not learn -> not comparable ({v})")



DL_REGULAR = ("even_pairs", "modular_arithmetic", "parity_check", "cycle_navigation")
DL_TASKS = DL_REGULAR + ("reverse_string", "stack_manipulation", "duplicate_string", "odds_first")  # then DCF, CS


def fake_deletang(d, contiguous, randomized, spread=0.01, ind=0.99, chance=0.5, regular=0.95):
    """The deletang grid on 8 tasks (4 regular) x {none, rope, transformer_xl} x both position modes x 2 learning
    rates x 3 seeds: in distribution (size 10) `ind` at lr 1e-3 and 0.5 at lr 1e-4 (so the gate must pick the best
    learning rate); beyond it (sizes 20, 30) seeds at -spread, 0, +spread around `contiguous` or `randomized` on the
    non-regular tasks, `regular` in both modes on the regular ones (lr 1e-4: 0.5), NoPE the same in both modes."""
    rows = []
    for task in DL_TASKS:
        for enc in ("none", "rope", "transformer_xl"):
            for pos in ("contiguous", "randomized"):
                m = regular if task in DL_REGULAR else contiguous if pos == "contiguous" or enc == "none" else randomized
                for lr, good in (("0.001", True), ("0.0001", False)):
                    v = (task, enc, pos, lr)
                    rows.append((v, 10, True, "token_acc", [ind if good else 0.5] * 3, chance))
                    for L in (20, 30):
                        rows.append((v, L, False, "token_acc", [m - spread, m, m + spread] if good else [0.5] * 3, chance))
    write_runs(d, ["task.name", "encoding.name", "train.positions", "train.lr"], rows)


def test_deletang(fresh, tmp):
    """deletang: claim A (randomized gain beyond the seed spread), claim B (no non-regular task generalizes with
    contiguous ids), the gate, the papers' max and the mean beside it."""
    fake_deletang(fresh("d1"), 0.55, 0.75)
    v = page("deletang", os.path.join(tmp, "d1"))
    check("41..500): reproduces;" in v and "gain of the max +10.0 points" in v and "(of the mean +10.0)" in v
          and "over 16 pair(s) on 8 of 8 tasks" in v and ": separated" in v and "8 pair(s) with a gain the seeds separate" in v
          and "permutation p = 0.014" in v,
          f"deletang: randomized above contiguous beyond the spread, non-regular fail -> reproduces ({v})")
    text = open(os.path.join(tmp, "d1", "RESULT.md")).read()
    check("| duplicate_string | CS | rope | 99.0 ± 0.0 (3) |" in text and "56.0 / 55.0 ± 1.0 (3)" in text
          and "| +20.0 | gain |" in text and "not found in a stored primary source" in text,
          "deletang: the table has the gate (best lr), the max over every run / the best lr's mean, the gain; the page "
          "says what of the papers is missing")
    check("+0.0 points on average over 8 tasks" in text, "deletang: the NoPE control (no ids) shows no gain")
    fake_deletang(fresh("d2"), 0.55, 0.6, spread=0.2)
    v = page("deletang", os.path.join(tmp, "d2"))
    check("41..500): partly reproduces;" in v and "a tie (seeds)" in v and "0 pair(s) with a gain the seeds separate" in v,
          f"deletang: a gain inside the seed spread is a tie, claim B still holds -> partly ({v})")
    fake_deletang(fresh("d3"), 0.95, 0.95, spread=0.005)
    v = page("deletang", os.path.join(tmp, "d3"))
    check("does not reproduce" in v and "reverse_string × rope generalizes" in v and "a tie (seeds)" in v,
          f"deletang: no gain and a non-regular task generalizing -> does not reproduce ({v})")
    fake_deletang(fresh("d4"), 0.55, 0.75, ind=0.6)
    v = page("deletang", os.path.join(tmp, "d4"))
    check("not comparable: the model did not learn the task" in v and "no (task, encoding) pair passes" in v
          and "the control needs a competent task on both sides" in v, f"deletang: nothing learned -> not comparable ({v})")
    # Claim B's bar follows the chance level: 89-91% beyond training generalizes against chance 20% (bar 84%), is
    # unclear against chance 50% (bar 90%: the max passes it, mean - std does not).
    fake_deletang(fresh("d5"), 0.9, 0.9, chance=0.2)
    v = page("deletang", os.path.join(tmp, "d5"))
    check("41..500): does not reproduce;" in v and "duplicate_string × rope generalizes" in v,
          f"deletang: 90% against chance 20% generalizes -> B fails ({v})")
    fake_deletang(fresh("d6"), 0.9, 0.9)
    v = page("deletang", os.path.join(tmp, "d6"))
    check("41..500): partly reproduces;" in v and "duplicate_string × rope unclear (seeds)" in v,
          f"deletang: 90% against chance 50% is unclear -> B counts half ({v})")


def check_recipes_validate(pelab, names):
    """Every recipe, full and quick (and each arm), loads and validates through `pelab train`."""
    for n in names:
        config = os.path.join(RECIPES_DIR, n + ".toml")
        header = common.config_header(config)
        check("Scaled down" in header or "scaled down" in header, f"{n}: the header says what is scaled down")
        # A recipe with arms (`# reproduce.arm:` lines) validates with each arm's overrides.
        for arm in [shlex.split(o) for _, o in common.recipe_arms(config)] or [[]]:
            for sets in ([], shlex.split(common.quick_overrides(config))):
                p = subprocess.run([pelab, "train", config] + arm + sets, capture_output=True, text=True, cwd=ROOT)
                check("defines a [sweep] grid of" in p.stderr + p.stdout,
                      f"{n} {arm + sets}: validates (got: {(p.stderr + p.stdout)[:300]})")
        check(common.quick_overrides(config) != "", f"{n}: has a '# reproduce.quick:' line")


def test_pages(fresh, tmp):
    """format, ruoss, press and kazemnejad pages on fake run directories: words, gates, the n-gram gate."""
    fake_format(fresh("f1"), True)
    check(page("format", os.path.join(tmp, "f1")).startswith("The NoPE format effect reproduces"), "format: reproduces")
    fake_format(fresh("f2"), False)
    check("does not reproduce" in page("format", os.path.join(tmp, "f2")), "format: does not reproduce")
    fake_format(fresh("f4"), False, seeds=2)
    v = page("format", os.path.join(tmp, "f4"))
    check("is provisional (2 seed(s) per group: no effect shown, none ruled out)" in v and "does not reproduce" not in v,
          f"format with 2 seeds: provisional, never 'does not reproduce' ({v})")

    fake_ruoss(fresh("r1"), 0.15)
    v = page("ruoss", os.path.join(tmp, "r1"))
    check("reverse reproduces at" in v and "+15.0 points" in v, f"ruoss: reproduces with +15.0 ({v})")
    fake_ruoss(fresh("r3"), 0.03)
    check("partly reproduces" in page("ruoss", os.path.join(tmp, "r3")), "ruoss: a small gain partly reproduces")
    fake_ruoss(fresh("r2"), -0.05)
    check("does not reproduce" in page("ruoss", os.path.join(tmp, "r2")), "ruoss: does not reproduce")

    fake_press(fresh("p1"), 0.02, 0.6)
    v = page("press", os.path.join(tmp, "p1"))
    check("claim reproduces at" in v and "ALiBi +2.0% ± 0.0" in v and "sinusoidal +60.0% ± 0.0" in v
          and "every encoding passes" in v, f"press: reproduces ({v})")
    fake_press(fresh("p2"), 0.5, 0.0)
    check("does not reproduce" in page("press", os.path.join(tmp, "p2")), "press: does not reproduce")

    fake_kazemnejad(fresh("k1"), ["none", "t5", "alibi", "rope", "sinusoidal"])
    v = page("kazemnejad", os.path.join(tmp, "k1"))
    check("ranking reproduces at" in v and "none 1.00 > t5 0.50" in v and "+1.00" in v, f"kazemnejad: reproduces ({v})")
    fake_kazemnejad(fresh("k3"), ["none", "t5", "alibi", "rope", "sinusoidal"], chance=0.48)
    v = page("kazemnejad", os.path.join(tmp, "k3"))
    check("ranking partly reproduces" in v and "0 of 5 ranked tasks" in v, f"kazemnejad: at chance, only partly ({v})")
    fake_kazemnejad(fresh("k2"), ["sinusoidal", "rope", "alibi", "t5", "none"])
    v = page("kazemnejad", os.path.join(tmp, "k2"))
    check("does not reproduce" in v and "-1.00" in v, f"kazemnejad: does not reproduce ({v})")
    check(stats.average_ranks({"a": 0.5, "b": 0.5, "c": None, "d": 0.9}) == {"d": 1, "a": 2.5, "b": 2.5, "c": 4},
          "average ranks: ties share, missing last")

    # Competence gates: a model that did not learn the task in distribution is not judged.
    fake_format(fresh("f3"), True, ind=0.5)
    v = page("format", os.path.join(tmp, "f3"))
    check("not comparable: the model did not learn the task" in v, f"format: unlearned -> not comparable ({v})")
    fake_ruoss(fresh("r4"), 0.15, ind_randomized=0.6)
    v = page("ruoss", os.path.join(tmp, "r4"))
    check("not comparable: the model did not learn the task" in v and "6 pair(s) not comparable" in v,
          f"ruoss: randomized runs below the gate -> not comparable ({v})")
    check("15 tasks" in v and "not the same quantity" in v, f"ruoss: the verdict states the paper-metric limit ({v})")
    fake_ruoss(fresh("r5"), 0.15, spread=0.3)
    v = page("ruoss", os.path.join(tmp, "r5"))
    check("does not reproduce" in v and "0 with a gain the seeds separate" in v,
          f"ruoss: a gain inside the seed spread is a tie ({v})")
    fake_press(fresh("p3"), 0.02, 0.6, alibi_loss=2.75)
    v = page("press", os.path.join(tmp, "p3"))
    check("not comparable: the model did not learn the task" in v and "fails: alibi" in v,
          f"press: ALiBi worse than the bigram inside the context -> not comparable ({v})")
    text = open(os.path.join(tmp, "p3", "RESULT.md")).read()
    check("Witten-Bell" in text and "4-gram 2.194" in text and "| alibi | 2.750 ± 0.000 (3) | +0.556 | no |" in text,
          "press: the page names the n-gram gate, its numbers and the model's distance to it")
    corpus = "/usr/share/games/fortunes/literature"
    if os.path.isfile(corpus):
        loss, vocab, n_train, n_pairs = ngram.bigram_loss(corpus, 0.1)
        check(abs(loss - 2.6787) < 1e-3 and vocab == 82 and n_train == 48230,
              f"bigram on the press corpus: 2.679 nats/char, 82 bytes, 48230 training bytes (got {loss}, {vocab}, {n_train})")
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(b"abababababab" * 9 + b"ababababab")  # 118 bytes: 12 held out ('ab' x 6 -> 11 pairs)
    loss, vocab, n_train, n_pairs = ngram.bigram_loss(f.name, 0.1)
    os.unlink(f.name)
    # training split: 106 bytes 'abab...ab', so 53 'ab' and 52 'ba' pairs; add-one over 2 symbols:
    # P(b|a) = (53 + 1) / (53 + 2), P(a|b) = (52 + 1) / (52 + 2); held out 'ab' x 6: 6 'ab' and 5 'ba' pairs
    want = -(6 * math.log(54 / 55) + 5 * math.log(53 / 54)) / 11
    check(vocab == 2 and n_pairs == 11 and abs(loss - want) < 1e-12, f"bigram by hand: {loss} vs {want}")
    fake_press(fresh("p4"), 0.02, 0.6, rope_rise=0.6)
    v = page("press", os.path.join(tmp, "p4"))
    check("claim reproduces" in v and "+60.0% ± 0.0" in open(os.path.join(tmp, "p4", "RESULT.md")).read(),
          f"press: RoPE rising like sinusoidal is shown, and does not change the word ({v})")


def test_rank_rule(fresh, tmp):
    """The rank rule: exact permutation distribution of Kendall's tau, ties inside the seed spread."""
    tail = stats.tau_tail(5)
    check(abs(tail[0.6] - 14 / 120) < 1e-12 and abs(tail[0.8] - 5 / 120) < 1e-12 and tail[1.0] == 1 / 120,
          f"tau tail for 5 items: P(>=0.6) = 0.117, P(>=0.8) = 0.042 (got {tail})")
    check("needs tau ≥ 0.80" in stats.rank_rule_text(5) and "needs tau ≥ 1.00" in stats.rank_rule_text(4),
          "rank rule: 5 items need tau 0.8, 4 items need 1.0 at alpha 0.05")
    check(abs(stats.tau_p_value({"a": 3, "b": 2, "c": 1}, {"a": 3, "b": 2, "c": 1}) - 1 / 6) < 1e-12,
          "p of a perfect order of 3: 1/6")
    fake_kazemnejad(fresh("k4"), ["none", "t5", "alibi", "sinusoidal", "rope"])  # one swap: tau 0.8, p 0.042
    v = page("kazemnejad", os.path.join(tmp, "k4"))
    check("ranking reproduces" in v and "+0.80" in v and "0.042" in v, f"kazemnejad: tau 0.8 passes ({v})")
    fake_kazemnejad(fresh("k5"), ["t5", "none", "alibi", "sinusoidal", "rope"])  # two swaps: tau 0.6, p 0.117
    v = page("kazemnejad", os.path.join(tmp, "k5"))
    check("does not reproduce" in v and "+0.60" in v and "0.117" in v, f"kazemnejad: tau 0.6 is not enough ({v})")
    fake_kazemnejad(fresh("k6"), ["none", "t5", "alibi", "rope", "sinusoidal"], spread=0.2)
    v = page("kazemnejad", os.path.join(tmp, "k6"))
    check("does not reproduce" in v and "none 1.00 = t5 1.00" not in v and "= " in v,
          f"kazemnejad: orders inside the seed spread are ties ({v})")
    fake_kazemnejad(fresh("k7"), ["none", "t5", "alibi", "rope", "sinusoidal"], unlearned=[("parity", "rope")])
    v = page("kazemnejad", os.path.join(tmp, "k7"))
    check("4 of 5 tasks" in v and "parity" not in v.split("learned (")[1].split(")")[0],
          f"kazemnejad: a task one encoding did not learn is not ranked ({v})")
    fake_kazemnejad(fresh("k8"), ["none", "t5", "alibi", "rope", "sinusoidal"],
                    unlearned=[(t, "rope") for t in ("copy", "reverse", "addition", "sort", "parity")])
    v = page("kazemnejad", os.path.join(tmp, "k8"))
    check("not comparable: the model did not learn the task" in v, f"kazemnejad: nothing learned -> not comparable ({v})")
    r, g = stats.tie_ranks({"a": (0.9, 0.05, 3), "b": (0.8, 0.06, 3), "c": (0.5, 0.01, 3), "d": (0.1, 0.0, 1)})
    check(g == [["a", "b"], ["c", "d"]] and r == {"a": 1.5, "b": 1.5, "c": 3.5, "d": 3.5},
          f"tie ranks: overlapping a, b share 1.5; d has one seed, so it separates from nothing (got {g}, {r})")


def test_script(pelab, fresh, tmp):
    """reproduce.sh end to end on fake run directories (--page-only trains nothing), and its errors."""
    env = dict(os.environ, PELAB=pelab, REPRODUCE_OUT=os.path.join(tmp, "r1"), REPRODUCE_RESULTS=os.path.join(tmp, "res"))
    with open(os.path.join(tmp, "r1", "reproduce_times.txt"), "w") as f:
        f.write("2026-11-23T14:00:00Z 90.0 170.5 2 --set train.steps=2000\n")
    fake_sweep_toml(os.path.join(tmp, "r1"), "ruoss", True)
    sh = os.path.join(ROOT, "scripts", "reproduce.sh")
    p = subprocess.run(["bash", sh, "ruoss", "--quick", "--page-only"], capture_output=True, text=True, env=env)
    check(p.returncode == 0, f"reproduce.sh --page-only: exit 0 (got {p.returncode}: {p.stderr})")
    copy = os.path.join(tmp, "res", "ruoss.quick.md")
    text = open(copy).read() if os.path.isfile(copy) else ""
    check("2.8 min CPU" in text and "1.5 min wall" in text and "quick variant" in text,
          "the copied page has the times and the variant")
    check(os.path.isfile(os.path.join(tmp, "res", "ruoss.quick.results.csv"))
          and os.path.isfile(os.path.join(tmp, "res", "ruoss.quick.provenance.json")),
          "the seed-level results and the provenance are written beside the page")
    # --rules-only: the page again from the committed results alone (the run directory gone).
    shutil.move(os.path.join(tmp, "r1"), os.path.join(tmp, "r1-moved"))
    os.remove(copy)
    p = subprocess.run(["bash", sh, "ruoss", "--quick", "--rules-only"], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and os.path.isfile(copy) and "2.8 min CPU" in open(copy).read(),
          f"reproduce.sh --rules-only: the page from ruoss.quick.results.csv and its provenance (got {p.returncode}: {p.stderr})")
    shutil.move(os.path.join(tmp, "r1-moved"), os.path.join(tmp, "r1"))
    # A recipe with arms: the page reads RUN_DIR/ARM for each arm; a missing arm is an error naming it.
    env_arms = dict(env, REPRODUCE_OUT=os.path.join(tmp, "c1"))
    for arm, sets in common.recipe_arms(os.path.join(RECIPES_DIR, "cho2024.toml")):
        fake_sweep_toml(os.path.join(tmp, "c1", arm), "cho2024", False, sets)
    p = subprocess.run(["bash", sh, "cho2024", "--page-only"], capture_output=True, text=True, env=env_arms)
    check(p.returncode == 0 and os.path.isfile(os.path.join(tmp, "res", "cho2024.md")),
          f"reproduce.sh --page-only with arms: exit 0 and a page (got {p.returncode}: {p.stderr})")
    os.rename(os.path.join(tmp, "c1", "baseline"), os.path.join(tmp, "c1", "other"))
    p = subprocess.run(["bash", sh, "cho2024", "--page-only"], capture_output=True, text=True, env=env_arms)
    check(p.returncode == 2 and "c1/baseline/sweep.toml: missing" in p.stderr,
          f"reproduce.sh with a missing arm: exit 2 naming it (got {p.returncode}: {p.stderr})")
    p = subprocess.run(["bash", sh, "kazemnejadd"], capture_output=True, text=True, env=env)
    check(p.returncode == 2 and "unknown recipe 'kazemnejadd'" in p.stderr and "kazemnejad" in p.stderr,
          f"unknown NAME: exit 2 naming the known recipes (got {p.returncode}: {p.stderr})")
    p = subprocess.run(["bash", sh, "ruoss", "--fast"], capture_output=True, text=True, env=env)
    check(p.returncode == 2 and "unknown option '--fast'" in p.stderr, "unknown option: exit 2")
    bad = fresh("bad")
    with open(os.path.join(bad, "results.csv"), "w") as f:
        f.write("run,encoding.name,seed,task,train_len,eval_len,in_distribution,metric,value,chance,na_reason\n"
                "r,rope,0,t,8,x,true,loss,1,,\n")
    env_py = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run(["/usr/bin/python3", "-m", "pelab.reproduce", "page", "press", bad, "--config",
                        os.path.join(RECIPES_DIR, "press.toml"), "--out", os.path.join(bad, "R.md")],
                       capture_output=True, text=True, env=env_py)
    check(p.returncode == 2 and "results.csv:2" in p.stderr and not os.path.exists(os.path.join(bad, "R.md")),
          f"malformed results.csv: exit 2 with file:line, no page (got {p.returncode}: {p.stderr})")
    # The same through reproduce.sh, with a sweep.toml that is the recipe's: the refused page leaves no
    # results directory behind (issue #38, item 15).
    fake_sweep_toml(bad, "press", False)
    env_bad = dict(env, REPRODUCE_OUT=bad, REPRODUCE_RESULTS=os.path.join(tmp, "made", "pages"))
    p = subprocess.run(["bash", sh, "press", "--page-only"], capture_output=True, text=True, env=env_bad)
    check(p.returncode == 2 and "results.csv:2" in p.stderr and not os.path.exists(os.path.join(tmp, "made")),
          f"reproduce.sh --page-only refused by the page: no directory left (got {p.returncode}: {p.stderr})")

def main():
    pelab = sys.argv[1]
    names = sorted(f[:-5] for f in os.listdir(RECIPES_DIR) if f.endswith(".toml"))
    check(set(names) == set(RECIPES), f"every recipe has a page and every page a recipe: {names} vs {list(RECIPES)}")

    check_recipes_validate(pelab, names)

    with tempfile.TemporaryDirectory() as tmp:
        def fresh(name):
            d = os.path.join(tmp, name)
            os.makedirs(d)
            return d

        test_pages(fresh, tmp)
        test_rank_rule(fresh, tmp)
        test_arithmetic(fresh, tmp)
        test_deletang(fresh, tmp)
        test_script(pelab, fresh, tmp)

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
