#!/usr/bin/env python3
"""Tests of scripts/first_fit.py on fake run directories: the first evaluation at the target is found, its
'beyond' records are averaged, a run that never fits falls back to eval.json at the cap, a fit at the
last step uses eval.json, and bad input exits 2."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "first_fit.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def make_run(root, name, seed, evals, ood_end, steps=1000):
    """evals: (step, token_acc at train_len 16, [beyond token_acc per length] or None)."""
    d = os.path.join(root, f"encoding.name={name}__train.seed={seed}")
    os.makedirs(d)
    with open(os.path.join(d, "cell.toml"), "w") as f:
        f.write(f'[cell]\nindex = 0\n\n[cell.assignment]\n"encoding.name" = "{name}"\n"train.seed" = {seed}\n')
    with open(os.path.join(d, "metrics.jsonl"), "w") as f:
        for step, acc, beyond in evals:
            r = {"step": step, "split": "eval", "length": 16, "token_acc": acc}
            if beyond is not None:
                r["beyond"] = [{"length": 24 + 8 * i, "samples": 64, "token_acc": b} for i, b in enumerate(beyond)]
            f.write(json.dumps({"step": step, "split": "train", "length": None, "token_acc": 0.5}) + "\n")
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(d, "eval.json"), "w") as f:
        json.dump({"train_len": 16, "steps": steps, "results": [{"length": 16, "token_acc": evals[-1][1]}],
                   "ood": {"token_acc": ood_end}}, f)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as root:
    # rope fits at 500 (beyond 0.2, 0.4: mean 0.3) and at 250 (0.1, 0.3: 0.2); the budget ends at 0.05.
    make_run(root, "rope", 0, [(250, 0.9, [0.5, 0.5]), (500, 0.995, [0.2, 0.4]), (750, 1.0, [0.9, 0.9]),
                               (1000, 1.0, None)], 0.05)
    make_run(root, "rope", 1, [(250, 0.99, [0.1, 0.3]), (1000, 1.0, None)], 0.07)
    # none never fits: first fit is the model at the cap (eval.json 0.12 beyond, 0.5 at 16).
    make_run(root, "none", 0, [(250, 0.4, [0.1, 0.1]), (1000, 0.5, None)], 0.12)
    # alibi fits only at the last step, which has no beyond records: eval.json's 0.8.
    make_run(root, "alibi", 0, [(250, 0.5, [0.0, 0.0]), (1000, 0.995, None)], 0.8)
    r = run(root)
    check(r.returncode == 0, f"exit 0 on good runs, got {r.returncode}: {r.stderr}")
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in r.stdout.splitlines() if line.startswith("| encoding.name=")}
    check(rows.get("encoding.name=rope", [""])[0] == "2/2", f"rope fits in 2 of 2: {rows.get('encoding.name=rope')}")
    check(rows.get("encoding.name=rope", ["", ""])[1] == "375", f"rope's mean fit step (500 + 250) / 2: {rows}")
    check(rows.get("encoding.name=rope", [""] * 4)[3] == "25.0 ± 7.1 (2)", f"rope beyond at first fit 30, 20: {rows}")
    check(rows.get("encoding.name=rope", [""] * 7)[6] == "6.0 ± 1.4 (2)", f"rope at budget end 5, 7: {rows}")
    check(rows.get("encoding.name=none", ["", "", "", ""])[:4] == ["0/1", "-", "50.0 ± 0.0 (1)", "12.0 ± 0.0 (1)"],
          f"none never fits: the cap's eval.json: {rows.get('encoding.name=none')}")
    check(rows.get("encoding.name=alibi", ["", "", "", ""])[:4] == ["1/1", "1000", "99.5 ± 0.0 (1)", "80.0 ± 0.0 (1)"],
          f"alibi fits at the last step: eval.json: {rows.get('encoding.name=alibi')}")
    # a lower target moves rope seed 0's fit to step 250
    r = run(root, "--target", "0.9")
    check("| encoding.name=rope | 2/2 | 250 |" in r.stdout, f"--target 0.9: rope fits at 250: {r.stdout}")
    # an intermediate fit without beyond records is an error, not a silent number
    make_run(root, "fire", 0, [(250, 0.995, None), (1000, 1.0, None)], 0.9)
    r = run(root)
    check(r.returncode == 2 and "beyond" in r.stderr, f"no beyond records: exit 2 naming them: {r.returncode} {r.stderr}")

with tempfile.TemporaryDirectory() as empty:
    r = run(empty)
    check(r.returncode == 2 and "no finished run" in r.stderr, f"empty dir: exit 2: {r.stderr}")
r = run("/nonexistent/dir")
check(r.returncode == 2 and "not a directory" in r.stderr, f"missing dir: exit 2: {r.stderr}")
r = run(ROOT, "--target", "1.5")
check(r.returncode == 2 and "--target" in r.stderr, f"bad target: exit 2: {r.stderr}")

print(f"{len(failures)} failure(s)" if failures else "all first_fit.py checks passed")
sys.exit(1 if failures else 0)
