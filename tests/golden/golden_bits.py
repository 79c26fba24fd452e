#!/usr/bin/env python3
"""Golden bits: short runs whose weight checksums are committed, so that no change of results goes unnoticed.

Every registered encoding (a tiny model on copy, or on addition for the encodings that read digit
indices) and the first cell of every shipped config (experiments/configs/*.toml: its model, task and
settings, shrunk to 30 steps and a small evaluation) is trained for 30 steps through each GEMM path
(libxsmm, openblas). Each run's final weights (every tensor's name, shape and bytes) and its evaluation
results are hashed and compared with tests/golden/golden_bits.json.

Bits depend on the build and on which kernels run, not on the thread count (docs/performance.md), so
the checksums are recorded per *class*: the compiler and build flags, the hot loops' clone
(core/simd.hpp: x86-64-v4 AVX-512, x86-64-v3 AVX2, baseline), the OpenBLAS kernel (core/blas_coretype.hpp)
and, for the libxsmm path, libxsmm's JIT target. All of it is read from the runs' own provenance. A
class not recorded in the file is reported as skipped (exit 77), never as passed.

A change of bits fails. To accept one, regenerate the checksums of this class and say why:
    tests/golden/golden_bits.py --pelab build/pelab --update --reason "what moved and why"
which rewrites golden_bits.json and adds "golden bits DIGEST: REASON" to CHANGELOG.md's Unreleased
section. DIGEST is a hash of every recorded checksum, and each check (even a skipped one) fails unless
CHANGELOG.md names the current digest: checksums edited without a CHANGELOG line fail ctest.

Usage (ctest runs one group and path per test):
    golden_bits.py --pelab PELAB [--group encodings|configs] [--path libxsmm|openblas] [--keep DIR]
    golden_bits.py --pelab PELAB --update --reason TEXT
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "golden_bits.json"
CHANGELOG = SOURCE / "CHANGELOG.md"
SKIP = 77
STEPS = 30
PATHS = ("libxsmm", "openblas")
GROUPS = ("encodings", "configs")


def encoding_config(name, task):
    # Two layers of d_model 32: every module runs, each run well under a second.
    return (f'[model]\nd_model = 32\nn_layers = 2\nn_heads = 2\n[encoding]\nname = "{name}"\n'
            f'[task]\nname = "{task}"\ntrain_len = 8\n'
            f'[train]\nsteps = {STEPS}\nbatch_size = 8\nlog_every = 10\neval_every = 1000\n'
            f'[eval]\nlengths = [8, 12]\nsamples = 8\n')


def config_overrides(cfg):
    """The --set overrides that shrink a shipped config's first cell: 30 steps, evaluation at train_len."""
    train_len = cfg.get("task", {}).get("train_len")
    sets = [f"train.steps={STEPS}", "train.eval_every=1000", "train.log_every=10", "eval.samples=8",
            "train.warmup=10"]
    ev = cfg.get("eval", {})
    if train_len is not None:
        sets.append(f"eval.lengths=[{train_len}]")
    if "length_range" in ev:
        sets.append("eval.length_range=[]")
    if "operand_grid" in ev:
        sets.append("eval.operand_grid=[]")
    if "beyond_samples" in ev:
        sets.append("eval.beyond_samples=0")
    return sets


def run(cmd, log):
    with open(log, "w") as out:
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=600).returncode


def tensor_digest(path):
    """sha256 over every tensor (sorted by name): its name, dtype, shape and bytes; not the metadata."""
    raw = Path(path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    h = hashlib.sha256()
    for name in sorted(k for k in header if k != "__metadata__"):
        t = header[name]
        begin, end = t["data_offsets"]
        h.update(f"{name} {t['dtype']} {t['shape']}\n".encode())
        h.update(data[begin:end])
    return h.hexdigest()[:16]


def run_digests(run_dir):
    run_dir = Path(run_dir)
    last = max((run_dir / "checkpoints").iterdir(), key=lambda p: p.name)
    ev = json.loads((run_dir / "eval.json").read_text())
    results = json.dumps([ev.get("final_train_loss"), ev.get("results")], sort_keys=True)
    return {"weights": tensor_digest(last / "weights.safetensors"),
            "eval": hashlib.sha256(results.encode()).hexdigest()[:16]}, ev.get("provenance", {})


def class_key(prov, path):
    """What decides the bits of a run (module docstring), from its provenance."""
    build = re.sub(r"\s+", " ", prov.get("build", "?"))
    blas = prov.get("blas", "?")
    kernel = re.search(r"kernel (\S+)", blas)
    key = f"{build} | {prov.get('simd', '?')} | OpenBLAS kernel {kernel.group(1) if kernel else blas}"
    return key + (f" | {prov.get('gemm', '?')}" if path == "libxsmm" else " | openblas path")


def registered_encodings(pelab):
    out = subprocess.run([pelab, "list"], capture_output=True, text=True, check=True).stdout
    names = []
    for line in out.splitlines()[1:]:
        if not line.strip():
            break
        m = re.match(r"^  (\S+)\s", line)
        if m:
            names.append(m.group(1))
    return names


def items(pelab, group):
    """(item name, function(out_dir, path, log) -> exit status) for the group."""
    if group == "encodings":
        for name in registered_encodings(pelab):
            yield f"encoding {name}", lambda out, path, log, name=name: train_encoding(pelab, name, out, path, log)
    else:
        for toml in sorted((SOURCE / "experiments" / "configs").glob("*.toml")):
            yield f"config {toml.stem}", lambda out, path, log, toml=toml: train_config(pelab, toml, out, path, log)


def train_encoding(pelab, name, out, path, log):
    for task in ("copy", "addition"):  # addition for the encodings that read digit indices
        cfg = Path(out + ".toml")
        cfg.write_text(encoding_config(name, task))
        rc = run([pelab, "train", str(cfg), "--out", out, "--threads", "1", "--quiet",
                  "--set", f"train.gemm={path}"], log)
        if rc == 0 or "digit" not in Path(log).read_text():
            return rc
        shutil.rmtree(out, ignore_errors=True)
    return rc


def train_config(pelab, toml, out, path, log):
    cfg = tomllib.loads(toml.read_text())
    cmd = [pelab, "train", str(toml), "--out", out, "--threads", "1", "--quiet", "--set", f"train.gemm={path}"]
    if cfg.get("sweep"):
        cmd += ["--cell", "0"]
    for s in config_overrides(cfg):
        cmd += ["--set", s]
    return run(cmd, log)


def measure(pelab, group, path, work, recorded=None):
    """{item: digests} and the class key of this machine for one group and path; exits on a failed run.
    Stops after the first run when its class is not in `recorded` (when given)."""
    got, key = {}, None
    for i, (item, train) in enumerate(items(pelab, group)):
        out = str(Path(work) / f"{group}_{path}_{i}")
        log = out + ".log"
        if train(out, path, log) != 0:
            sys.exit(f"FAIL: {item} ({path}): pelab train failed:\n{Path(log).read_text()[-2000:]}")
        got[item], prov = run_digests(out)
        key = key or class_key(prov, path)
        if recorded is not None and key not in recorded:
            break
    return got, key


def digest(classes):
    return hashlib.sha256(json.dumps(classes, sort_keys=True).encode()).hexdigest()[:12]


def changelog_names(d):
    return f"golden bits {d}" in CHANGELOG.read_text()


def load():
    return json.loads(DATA.read_text()) if DATA.exists() else {"classes": {}}


def check(pelab, group, path, work):
    classes = load()["classes"]
    d = digest(classes)
    if not changelog_names(d):
        sys.exit(f"FAIL: {DATA.name} holds checksums of digest {d}, which CHANGELOG.md does not name: a change of "
                 f"the golden bits needs a CHANGELOG line `golden bits {d}: what moved and why` in the same commit "
                 f"(golden_bits.py --update --reason TEXT writes both)")
    got, key = measure(pelab, group, path, work, classes)
    if key not in classes:
        print(f"SKIPPED: no golden bits recorded for this class:\n  {key}\nrecorded: "
              + "".join(f"\n  {k}" for k in classes) + "\nrecord them with golden_bits.py --update --reason TEXT")
        return SKIP
    want = {k[len(group) + 1:]: v for k, v in classes[key].items() if k.startswith(group + "/")}
    want = {k[:-len(path) - 1]: v for k, v in want.items() if k.endswith("/" + path)}
    bad = [f"  {item}: weights {got.get(item, {}).get('weights')} eval {got.get(item, {}).get('eval')}, "
           f"recorded weights {want.get(item, {}).get('weights')} eval {want.get(item, {}).get('eval')}"
           for item in sorted(set(got) | set(want)) if got.get(item) != want.get(item)]
    if bad:
        print(f"FAIL: the bits of {len(bad)} of {len(got)} {group} runs ({path} path) changed on\n  {key}:\n"
              + "\n".join(bad) + "\nIf intended: golden_bits.py --pelab PELAB --update --reason 'what moved and why'")
        return 1
    print(f"ok: {len(got)} {group} runs ({path} path) match the golden bits of\n  {key}")
    return 0


def add_changelog_line(line):
    text = CHANGELOG.read_text()
    at = text.index("## Unreleased") + len("## Unreleased\n")
    section = "\n### Golden bits (tests/golden/golden_bits.py)\n\n"
    if section in text:
        at = text.index(section) + len(section)
        CHANGELOG.write_text(text[:at] + line + "\n" + text[at:])
    else:
        CHANGELOG.write_text(text[:at] + section + line + "\n" + text[at:])


def update(pelab, reason, work):
    data = load()
    record, keys = {}, {}
    for path in PATHS:
        for group in GROUPS:
            got, key = measure(pelab, group, path, work)
            keys[path] = key
            record.update({f"{group}/{item}/{path}": v for item, v in got.items()})
    merged = {}  # one record per class: the libxsmm and openblas paths are keyed apart
    for path in PATHS:
        merged.setdefault(keys[path], {}).update({k: v for k, v in record.items() if k.endswith("/" + path)})
    before = digest(data["classes"])
    data["classes"].update(merged)
    after = digest(data["classes"])
    if after == before:
        print(f"unchanged: digest {after}")
        return 0
    DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    add_changelog_line(f"- golden bits {after}: {reason}")
    print(f"recorded {len(record)} runs of\n  " + "\n  ".join(merged) + f"\ndigest {before} -> {after}; "
          f"CHANGELOG.md names it")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pelab", required=True)
    ap.add_argument("--group", choices=GROUPS)
    ap.add_argument("--path", choices=PATHS)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--reason", help="with --update: what moved and why (the CHANGELOG line)")
    ap.add_argument("--keep", help="run directories here instead of a removed temporary one")
    a = ap.parse_args()
    if a.update and not (a.reason and a.reason.strip()):
        ap.error("--update needs --reason: what moved and why (it becomes the CHANGELOG line)")
    work = a.keep or tempfile.mkdtemp(prefix="golden_bits_")
    try:
        if a.update:
            return update(a.pelab, a.reason.strip(), work)
        rc = 0
        for path in [a.path] if a.path else PATHS:
            for group in [a.group] if a.group else GROUPS:
                r = check(a.pelab, group, path, work)
                rc = r if rc == 0 or r == 1 else rc
        return rc
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
