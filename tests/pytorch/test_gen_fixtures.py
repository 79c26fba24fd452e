#!/usr/bin/python3
"""gen_fixtures.py's command line: --list names every committed fixture file (init_pytorch is
gen_init_fixture.py's), an unknown name exits 2 naming the known ones and writes nothing, and NAMEs (a
FIXTURES key or a file name) write those files alone, equal to the committed ones up to the last bits
that another CPU may change (tests/pytorch/README.md). Run by ctest (exit 77 = skipped without torch).
"""
import contextlib
import io
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES_DIR = os.path.join(os.path.dirname(HERE), "fixtures")
sys.path.insert(0, HERE)
try:
    import numpy as np
    import gen_fixtures as gen
    import pelab_ref as ref
except ImportError as err:
    print(f"skipped: {err}")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(argv):
    """gen_fixtures.main(argv) in this process: (exit code, stdout, stderr)."""
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            gen.main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def main():
    code, out, _ = run(["--list"])
    listed = [line.split() for line in out.splitlines()]
    committed = sorted(f for f in os.listdir(FIXTURES_DIR) if f != "init_pytorch.safetensors")
    check(code == 0 and sorted(f for _, f in listed) == committed, f"--list names the committed files: {out}")

    with tempfile.TemporaryDirectory() as tmp:
        code, _, err = run(["--out", tmp, "none", "no_such_fixture"])
        check(code == 2 and "no_such_fixture" in err and "known: none, learned" in err and "trainer_rope" in err,
              f"an unknown name exits 2 listing the known ones (exit {code}): {err}")
        check(os.listdir(tmp) == [], "an unknown name writes nothing")

        code, out, _ = run(["--out", tmp, "none", "t5_buckets.safetensors", "none"])
        written = sorted(os.listdir(tmp))
        check(code == 0 and written == ["model_none.safetensors", "t5_buckets.safetensors"],
              f"two names write two files: {written}")
        for f in written:
            mine, meta = ref.load_safetensors(os.path.join(tmp, f))
            theirs, their_meta = ref.load_safetensors(os.path.join(FIXTURES_DIR, f))
            for m in (meta, their_meta):
                m.pop("torch_version", None)  # the machine's, not the fixture's
            check(meta == their_meta and sorted(mine) == sorted(theirs), f"{f}: metadata and keys as committed")
            for k in set(mine) & set(theirs):
                check(np.allclose(mine[k], theirs[k], rtol=0, atol=1e-4), f"{f}: {k} as committed")
    print(f"gen_fixtures.py command line: {len(failures)} check(s) failed" if failures else
          "gen_fixtures.py command line: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
