#!/usr/bin/env python3
"""Tests of scripts/reproduce.sh and scripts/reproduce_page.py, without training: every recipe config (and its
quick variant) loads and validates in pelab; the page generator computes each recipe's verdict from fake run
directories made to agree and to disagree with the paper; bad names and inputs exit 2 with a message.

usage: test_reproduce.py PELAB_BINARY
"""
import csv
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPES = os.path.join(ROOT, "experiments", "reproduce")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import reproduce_page as rp  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def write_summary(d, keys, rows):
    """rows: (group values tuple, length, in_dist, metric, mean, std, n, chance)."""
    with open(os.path.join(d, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(keys) + ["length", "in_distribution", "metric", "mean", "std", "n", "n_na", "chance"])
        for vals, length, ind, metric, mean, std, n, chance in rows:
            # A decoy metric beside each row: the page must pick its metric, not the first row of a length.
            w.writerow(list(vals) + [length, "true" if ind else "false", "decoy", repr(1 - mean), "0", n, 0, ""])
            w.writerow(list(vals) + [length, "true" if ind else "false", metric, repr(mean), repr(std), n, 0,
                                     "" if chance is None else repr(chance)])


def page(name, d, quick=0):
    out = os.path.join(d, "RESULT.md")
    v = rp.write_page(name, d, os.path.join(RECIPES, name + ".toml"), quick, out)
    text = open(out).read()
    check(v in text and "**Verdict:**" in text, f"{name}: the page carries the verdict")
    return v


def fake_format(d, good):
    keys = ["task.bos", "task.eos"]
    rows, steps = [], []
    for bos in ("true", "false"):
        for eos in ("scored", "absent"):
            acc2 = {("true", "scored"): 0.21, ("true", "absent"): 0.65, ("false", "scored"): 0.3, ("false", "absent"): 0.5}
            a = acc2[(bos, eos)] if good else 0.1
            rows += [((bos, eos), 16, True, "token_acc", 0.995, 0.001, 2, 0.15),
                     ((bos, eos), 32, False, "token_acc", a, 0.02, 2, 0.13)]
            for seed in (0, 1):
                s = (500 if bos == "true" else 1000) if good else 800
                steps.append([bos, eos, "r", seed, "finished", s, 100, 3000, "token_acc", 0.99, s, "true"])
    write_summary(d, keys, rows)
    with open(os.path.join(d, "steps_to_target.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys + ["run", "seed", "status", "steps", "eval_every", "step_limit", "target_metric", "target",
                           "steps_to_target", "reached"])
        w.writerows(steps)


def fake_ruoss(d, gain):
    rows = []
    for task in ("copy", "reverse"):
        for enc in ("learned", "sinusoidal", "rope"):
            for pos in ("contiguous", "randomized"):
                v = (task, enc, pos)
                rows.append((v, 8, True, "token_acc", 0.99, 0.0, 1, 0.1))
                for L in (16, 32):
                    rows.append((v, L, False, "token_acc", 0.3 + (gain if pos == "randomized" else 0), 0.0, 1, 0.1))
    write_summary(d, ["task.name", "encoding.name", "train.positions"], rows)


def fake_press(d, alibi_rise, sin_rise):
    rows = []
    for enc, rise in (("sinusoidal", sin_rise), ("rope", 0.1), ("alibi", alibi_rise)):
        rows += [((enc,), 64, True, "loss", 2.0, 0.0, 1, None), ((enc,), 256, False, "loss", 2.0 * (1 + rise), 0.0, 1, None)]
        os.makedirs(os.path.join(d, "encoding.name=" + enc))
        buckets = [{"from": a, "to": a + 32, "loss": 2.0 if a < 64 else 2.0 * (1 + rise)} for a in range(0, 256, 32)]
        res = [{"length": 64, "status": "ok", "buckets": buckets[:2]}, {"length": 256, "status": "ok", "buckets": buckets}]
        with open(os.path.join(d, "encoding.name=" + enc, "eval.json"), "w") as f:
            json.dump({"assignment": {"encoding.name": enc}, "results": res}, f)
    write_summary(d, ["encoding.name"], rows)


def fake_kazemnejad(d, order, chance=0.0):
    """order: encodings best first; a task's exact match beyond 2L follows it on every task (0.5, 0.4, ...)."""
    rows = []
    for task in ("copy", "reverse", "addition", "sort", "parity"):
        for i, enc in enumerate(order):
            rows.append(((task, enc), 8, True, "exact_match", 1.0, 0.0, 3, 0.0))
            for L in (12, 16):
                rows.append(((task, enc), L, False, "exact_match", 0.5 - 0.1 * i, 0.0, 3, chance))
    write_summary(d, ["task.name", "encoding.name"], rows)


def main():
    pelab = sys.argv[1]
    names = sorted(f[:-5] for f in os.listdir(RECIPES) if f.endswith(".toml"))
    check(set(names) == set(rp.RECIPES), f"every recipe has a page and every page a recipe: {names} vs {list(rp.RECIPES)}")

    # Every recipe, full and quick, loads and validates (listing the cells validates each one).
    for n in names:
        config = os.path.join(RECIPES, n + ".toml")
        header = rp.config_header(config)
        check("Scaled down" in header or "scaled down" in header, f"{n}: the header says what is scaled down")
        for sets in ([], shlex.split(rp.quick_overrides(config))):
            p = subprocess.run([pelab, "train", config] + sets, capture_output=True, text=True, cwd=ROOT)
            check("defines a [sweep] grid of" in p.stderr + p.stdout,
                  f"{n} {sets}: validates (got: {(p.stderr + p.stdout)[:300]})")
        check(rp.quick_overrides(config) != "", f"{n}: has a '# reproduce.quick:' line")

    with tempfile.TemporaryDirectory() as tmp:
        def fresh(name):
            d = os.path.join(tmp, name)
            os.makedirs(d)
            return d

        fake_format(fresh("f1"), True)
        check(page("format", os.path.join(tmp, "f1")).startswith("The NoPE format effect reproduces"), "format: reproduces")
        fake_format(fresh("f2"), False)
        check("does not reproduce" in page("format", os.path.join(tmp, "f2")), "format: does not reproduce")

        fake_ruoss(fresh("r1"), 0.15)
        v = page("ruoss", os.path.join(tmp, "r1"))
        check("gain reproduces at" in v and "+15.0 points" in v, f"ruoss: reproduces with +15.0 ({v})")
        fake_ruoss(fresh("r3"), 0.03)
        check("partly reproduces" in page("ruoss", os.path.join(tmp, "r3")), "ruoss: a small gain partly reproduces")
        fake_ruoss(fresh("r2"), -0.05)
        check("does not reproduce" in page("ruoss", os.path.join(tmp, "r2")), "ruoss: does not reproduce")

        fake_press(fresh("p1"), 0.02, 0.6)
        v = page("press", os.path.join(tmp, "p1"))
        check("claim reproduces at" in v and "+2.0% with ALiBi" in v and "+60.0% with sinusoidal" in v, f"press: reproduces ({v})")
        fake_press(fresh("p2"), 0.5, 0.0)
        check("does not reproduce" in page("press", os.path.join(tmp, "p2")), "press: does not reproduce")

        fake_kazemnejad(fresh("k1"), ["none", "t5", "alibi", "rope", "sinusoidal"])
        v = page("kazemnejad", os.path.join(tmp, "k1"))
        check("ranking reproduces at" in v and "none 1.00 > t5 0.50" in v and "+1.00" in v, f"kazemnejad: reproduces ({v})")
        fake_kazemnejad(fresh("k3"), ["none", "t5", "alibi", "rope", "sinusoidal"], chance=0.48)
        v = page("kazemnejad", os.path.join(tmp, "k3"))
        check("ranking partly reproduces" in v and "0 of 5 tasks" in v, f"kazemnejad: at chance, only partly ({v})")
        fake_kazemnejad(fresh("k2"), ["sinusoidal", "rope", "alibi", "t5", "none"])
        v = page("kazemnejad", os.path.join(tmp, "k2"))
        check("does not reproduce" in v and "-1.00" in v, f"kazemnejad: does not reproduce ({v})")
        check(rp.average_ranks({"a": 0.5, "b": 0.5, "c": None, "d": 0.9}) == {"d": 1, "a": 2.5, "b": 2.5, "c": 4},
              "average ranks: ties share, missing last")

        # The script end to end on a fake run directory (--page-only trains nothing), and its errors.
        env = dict(os.environ, PELAB=pelab, REPRODUCE_OUT=os.path.join(tmp, "r1"), REPRODUCE_RESULTS=os.path.join(tmp, "res"))
        with open(os.path.join(tmp, "r1", "reproduce_times.txt"), "w") as f:
            f.write("2026-11-23T14:00:00Z 90.0 170.5 2 --set train.steps=2000\n")
        sh = os.path.join(ROOT, "scripts", "reproduce.sh")
        p = subprocess.run(["bash", sh, "ruoss", "--quick", "--page-only"], capture_output=True, text=True, env=env)
        check(p.returncode == 0, f"reproduce.sh --page-only: exit 0 (got {p.returncode}: {p.stderr})")
        copy = os.path.join(tmp, "res", "ruoss.quick.md")
        text = open(copy).read() if os.path.isfile(copy) else ""
        check("1.5 min wall, 2.8 min CPU" in text and "quick variant" in text, "the copied page has the times and the variant")
        p = subprocess.run(["bash", sh, "kazemnejadd"], capture_output=True, text=True, env=env)
        check(p.returncode == 2 and "unknown recipe 'kazemnejadd'" in p.stderr and "kazemnejad" in p.stderr,
              f"unknown NAME: exit 2 naming the known recipes (got {p.returncode}: {p.stderr})")
        p = subprocess.run(["bash", sh, "ruoss", "--fast"], capture_output=True, text=True, env=env)
        check(p.returncode == 2 and "unknown option '--fast'" in p.stderr, "unknown option: exit 2")
        bad = fresh("bad")
        with open(os.path.join(bad, "summary.csv"), "w") as f:
            f.write("encoding.name,length,in_distribution,metric,mean,std,n,n_na,chance\nrope,x,true,loss,1,0,1,0,\n")
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "reproduce_page.py"), "press", bad,
                            "--config", os.path.join(RECIPES, "press.toml"), "--out", os.path.join(bad, "R.md")],
                           capture_output=True, text=True)
        check(p.returncode == 2 and "summary.csv:2" in p.stderr and not os.path.exists(os.path.join(bad, "R.md")),
              f"malformed summary.csv: exit 2 with file:line, no page (got {p.returncode}: {p.stderr})")

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
