#!/usr/bin/env python3
"""golden_bits.py's decisions, against a fake pelab (no training; a second or two): a first --update records
the checksums and writes the CHANGELOG line, the check then passes; changed bits fail (exit 1); checksums
edited without a CHANGELOG line naming their digest fail; a class with no record is skipped (exit 77);
--update without --reason is refused; a build without libxsmm skips that path."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Answers `list` with two encodings and `train ... --out DIR` with a run directory whose weights depend
# on the environment variable FAKE_BITS and whose provenance names the class FAKE_CLASS.
FAKE = r'''#!/usr/bin/python3
import json, os, struct, sys
from pathlib import Path
args = sys.argv[1:]
if args[0] == "list":
    print("positional encodings ([encoding] name = ...):\n  alpha        a\n  beta         b\n\nattention ...")
    sys.exit(0)
if os.environ.get("FAKE_NO_LIBXSMM") and "train.gemm=libxsmm" in args:
    print('error: c.toml:3: [train] gemm = "libxsmm": this build has no libxsmm')
    sys.exit(2)
out = Path(args[args.index("--out") + 1])
name = Path(args[1]).read_text().split('name = "')[1].split('"')[0]
ck = out / "checkpoints" / "step_000000030"
ck.mkdir(parents=True)
data = struct.pack("<2f", float(len(name)), float(os.environ.get("FAKE_BITS", "1")))
header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
(ck / "weights.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + data)
prov = {"build": "fake", "simd": os.environ.get("FAKE_CLASS", "v4"), "blas": "OpenBLAS; kernel K (auto)", "gemm": "G"}
(out / "eval.json").write_text(json.dumps({"final_train_loss": 1.0, "results": [], "provenance": prov}))
'''


def golden(tmp, *args, env=None):
    path = [] if "--update" in args or "--path" in args else ["--path", "openblas"]
    cmd = [sys.executable, str(HERE / "golden_bits.py"), "--pelab", str(tmp / "pelab"), "--group", "encodings",
           "--data", str(tmp / "golden.json"), "--changelog", str(tmp / "CHANGELOG.md"), *path, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return r.returncode, r.stdout + r.stderr


def expect(what, got, rc, needle):
    code, text = got
    if code != rc or needle not in text:
        sys.exit(f"FAIL: {what}: exit {code} (expected {rc}), output lacks {needle!r}:\n{text}")
    print(f"ok: {what}")


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "pelab").write_text(FAKE)
        (tmp / "pelab").chmod(0o755)
        (tmp / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n### Older\n")
        expect("--update needs --reason", golden(tmp, "--update"), 2, "--update needs --reason")
        expect("an empty record is not named by the changelog", golden(tmp), 1, "which CHANGELOG.md does not name")
        expect("the first record", golden(tmp, "--update", "--reason", "first"), 0, "CHANGELOG.md names it")
        if "golden bits" not in (tmp / "CHANGELOG.md").read_text():
            sys.exit("FAIL: --update wrote no CHANGELOG line")
        expect("the same bits pass", golden(tmp), 0, "ok: 2 encodings runs (openblas path)")
        expect("changed bits fail", golden(tmp, env={"FAKE_BITS": "2"}), 1, "the bits of 2 of 2 encodings runs")
        expect("another class is skipped", golden(tmp, env={"FAKE_CLASS": "v3"}), 77, "SKIPPED: no golden bits")
        expect("no libxsmm: that path is skipped", golden(tmp, "--path", "libxsmm", env={"FAKE_NO_LIBXSMM": "1"}), 77,
               "this build has no libxsmm")
        data = json.loads((tmp / "golden.json").read_text())
        for runs in data["classes"].values():
            for v in runs.values():
                v["weights"] = "0" * 16
        (tmp / "golden.json").write_text(json.dumps(data))
        expect("checksums edited without a CHANGELOG line fail", golden(tmp), 1, "which CHANGELOG.md does not name")
        expect("an update with a reason accepts new bits", golden(tmp, "--update", "--reason", "moved",
                                                                  env={"FAKE_BITS": "2"}), 0, "CHANGELOG.md names it")
        expect("and they pass", golden(tmp, env={"FAKE_BITS": "2"}), 0, "ok: 2 encodings runs")


if __name__ == "__main__":
    main()
