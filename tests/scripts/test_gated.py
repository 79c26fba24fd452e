#!/usr/bin/env python3
"""Tests of pelab.reproduce.gated (the results pages' gated tables) on fake sweep directories: the gate's
threshold and the seeds passing it, a group under the gate left out of the order, the tie rule's order among
the rest, the error-rate view, a named evaluation, the grid's order, and bad input (exit 2)."""
import contextlib
import io
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python"))
from pelab.reproduce import gated  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def make_run(root, cell, enc, seed, acc16, beyond, name="eval.json", chance=0.5):
    """A run trained at 16 with token_acc acc16 there and `beyond` at 32 and 64."""
    d = os.path.join(root, f"encoding.name={enc}__train.seed={seed}")
    os.makedirs(d, exist_ok=True)
    res = [{"length": 16, "in_distribution": True, "status": "ok", "chance": {"token_acc": chance}, "token_acc": acc16}]
    res += [{"length": L, "in_distribution": False, "status": "ok", "chance": {"token_acc": chance}, "token_acc": b}
            for L, b in zip((32, 64), beyond)]
    with open(os.path.join(d, name), "w") as f:
        json.dump({"cell": cell, "assignment": {"encoding.name": enc, "train.seed": seed}, "train_seconds": 30,
                   "eval_seconds": 0, "results": res}, f)


def run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = gated.main(argv)
    return rc, out.getvalue()


def row(text, group):
    hits = [line for line in text.splitlines() if line.startswith(f"| {group} |")]
    return [c.strip() for c in hits[0].strip("|").split("|")] if hits else None


def main():
    with tempfile.TemporaryDirectory() as root:
        sw = os.path.join(root, "sweep")
        # gate at chance 0.5: 0.5 + 0.8 * 0.5 = 0.9
        for s, (a, b) in enumerate([(1.0, 0.95), (0.99, 0.93), (1.0, 0.94)]):
            make_run(sw, 2, "good", s, a, (b, b))
        for s, b in enumerate([0.60, 0.62, 0.61]):
            make_run(sw, 0, "worse", s, 1.0, (b, b))
        for s, a in enumerate([0.95, 0.5, 0.5]):  # mean 0.65: under the gate, though one seed passes
            make_run(sw, 1, "stuck", s, a, (0.99, 0.99))
        rc, out = run([sw])
        check(rc == 0, f"rc 0 on a good sweep, got {rc}")
        lines = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line][1:]
        check([line.split("|")[1].strip() for line in lines] == ["worse", "stuck", "good"], f"grid order: {lines}")
        g, w, st = row(out, "good"), row(out, "worse"), row(out, "stuck")
        check(g and g[1] == "90.0" and g[2] == "3/3", f"gate threshold and seeds passing: {g}")
        check(st and st[2] == "1/3" and st[-2] == "not read (gate)", f"a group under the gate is not ranked: {st}")
        check(g and g[-2] == "1" and w and w[-2] == "2", f"separated groups get ranks 1 and 2: {g} {w}")
        check(g and g[-3].startswith("94.0 ± 1.0 (3) [93.0–95.0]"), f"beyond mean ± sd [min–max]: {g}")
        rc, out = run([sw, "--error"])
        g = row(out, "good")
        check(g and g[1] == "≤ 10.0" and g[-3].startswith("6.0 ± 1.0 (3) [5.0–7.0]"), f"error view: {g}")
        make_run(sw, 2, "good", 0, 0.2, (0.5, 0.5), name="eval-sparse.json")
        rc, out = run([sw, "--eval", "sparse"])
        g = row(out, "good")
        check(rc == 0 and g and g[2] == "3/3" and g[3] == "20.0 (1)" and g[-3].startswith("50.0 (1)"),
              f"named evaluation: scored on eval-NAME.json, gated on eval.json: {g}")
        check(row(out, "worse") is None, "runs without the named evaluation are left out")
        rc, out = run([f"arm={sw}"])
        check(rc == 0 and row(out, "arm: good") is not None, "LABEL=DIR prefixes the groups")
        rc, out = run([sw, "--lengths", "16"])
        g = row(out, "good")
        check(rc == 0 and g and len(g) == 7 and g[-3].startswith("94.0 ± 1.0"), f"--lengths keeps the beyond score: {g}")
        check(run([sw, "--lengths", "x"])[0] == 2, "a bad --lengths exits 2")
        one = os.path.join(root, "one")
        make_run(one, 0, "rope", 0, 1.0, (0.5, 0.5))
        d = os.path.join(one, os.listdir(one)[0], "eval.json")
        j = json.load(open(d))
        j["assignment"] = {"train.seed": 0}
        json.dump(j, open(d, "w"))
        rc, out = run([f"llama4={one}"])
        check(rc == 0 and row(out, "llama4") is not None, f"a one-group sweep is named by its label: {out}")
        check(run([os.path.join(root, "nope")])[0] == 2, "a missing directory exits 2")
        check(run([sw, "--eval", "nothing"])[0] == 2, "no run with the named evaluation exits 2")
    print("FAILED" if failures else "ok", len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
