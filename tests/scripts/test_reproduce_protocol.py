#!/usr/bin/env python3
"""Tests of the protocol features on the pages' side (python/pelab/reproduce/protocol.py, protocol_page.py): a tiny
real sweep with [protocol] select and budget "competent" (a few seconds), whose selection.csv (pelab's rule,
experiments/run/selection.cpp) the Python rule must agree with; the Table restricted to the selection; the page's
section (protocol, budget, steps used, the grid with the selection and the papers' aggregation labelled apart, the
curves); STEM.runs.csv round trip; every recipe header states its protocol and its budget in CPU-minutes.

usage: test_reproduce_protocol.py PELAB_BINARY
"""
import csv
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPES_DIR = os.path.join(ROOT, "experiments", "reproduce")
sys.path.insert(0, os.path.join(ROOT, "python"))
from pelab.reproduce import common, protocol, protocol_page  # noqa: E402
from pelab.reproduce.table import Table, read_results  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


GRID = """[model]
d_model = 16
n_layers = 1
n_heads = 2
[task]
name = "copy"
train_len = 4
[train]
steps = 60
batch_size = 8
log_every = 30
eval_every = 10
early_stop_metric = "loss"
early_stop_target = 100.0
budget = "competent"
plateau_evals = 1
plateau_eps = 1e9
[eval]
lengths = [2, 4, 8]
samples = 16
[sweep]
"encoding.name" = ["rope", "none"]
"train.lr" = [1e-3, 1e-2]
"train.seed" = [0, 1]
[protocol]
select = "train.lr"
"""


def test_real_sweep(pelab, tmp):
    """pelab's selection.csv and the Python rule choose the same value per group; runs carry steps and curves."""
    cfg = os.path.join(tmp, "grid.toml")
    with open(cfg, "w") as f:
        f.write(GRID)
    out = os.path.join(tmp, "sweep")
    p = subprocess.run([pelab, "sweep", cfg, "--out", out, "--jobs", "2"], capture_output=True, text=True)
    check(p.returncode == 0, f"the tiny protocol sweep runs (got {p.returncode}: {p.stderr[-500:]})")
    if p.returncode:
        return
    chosen_cpp = {}
    with open(os.path.join(out, "selection.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["selected"] == "true":
                chosen_cpp[r["group"]] = r["choice"]
    t = read_results(out)
    runs = protocol.read_runs(out, t, [])
    check(len(runs) == 8 and all(r["validation"] is not None and len(r["curves"]["token_acc"]) == 2 for r in runs),
          f"every run has its validation value and its held-out curve ({runs[:1]})")
    check(all(r["steps"] == 20 and r["status"] == "early_stopped" for r in runs),
          f"budget competent (a gate and a plateau every run passes) stops at the second evaluation: "
          f"{[r['steps'] for r in runs]}")
    sel = protocol.select(runs, t.keys, ["train.lr"])
    rest = [k for k in t.keys if k != "train.lr"]
    chosen_py = {",".join(f"{k}={v}" for k, v in zip(rest, g)): f"train.lr={s['selected'][0]}" for g, s in sel.items()}
    check(chosen_py == chosen_cpp, f"Python's selection is pelab's: {chosen_py} vs {chosen_cpp}")
    sub = protocol.apply(t, runs, ["train.lr"])
    check(sub.keys == ["encoding.name"] and len(sub.groups) == 2, f"the selection drops train.lr: {sub.keys}")
    path = os.path.join(tmp, "x.runs.csv")
    protocol.write_runs(runs, t.keys, path)
    back = protocol.read_runs_csv(path, t.keys)
    check(back == runs, "STEM.runs.csv reads back what was written")


def fake_table_and_runs():
    """Two groups x two learning rates x three seeds: group a's validation picks 0.001, but 0.01 is better beyond
    training (the papers' aggregation would pick it); group b's 0.01 has a run without a validation value."""
    t = Table(["encoding.name", "train.lr"])
    runs = []
    for enc, lr, val, ood in (("a", "0.001", 0.9, 0.2), ("a", "0.01", 0.8, 0.6), ("b", "0.001", 0.5, 0.1),
                              ("b", "0.01", 0.99, 0.1)):
        for s in range(3):
            t.add([enc, lr], s, "exact_match", 4, val, 0.0, True)
            t.add([enc, lr], s, "exact_match", 8, ood, 0.0, False)
            missing = enc == "b" and lr == "0.01" and s == 2
            runs.append({"group": (enc, lr), "seed": s, "cell": None, "steps": 100 + s, "status": "finished",
                         "validation_metric": "exact_match", "validation": None if missing else val,
                         "curves": {"exact_match": [(50, val / 2), (100, val)]}})
    return t, runs


def test_rule_and_section():
    t, runs = fake_table_and_runs()
    sel = protocol.select(runs, t.keys, ["train.lr"])
    check(sel[("a",)]["selected"] == ("0.001",), f"the best validation mean is chosen, not the best OOD ({sel})")
    check(sel[("b",)]["selected"] == ("0.001",), f"a value with a missing run is never chosen ({sel})")
    loss_runs = [dict(r, validation_metric="loss") for r in runs]
    check(protocol.select(loss_runs, t.keys, ["train.lr"])[("a",)]["selected"] == ("0.01",), "a loss: the lowest wins")
    tie = [dict(r, validation=0.5) for r in runs if r["group"][0] == "a"]
    check(protocol.select(tie, t.keys, ["train.lr"])[("a",)]["selected"] == ("0.001",), "a tie: the first in grid order")
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write('# reproduce.protocol: select lr\n# reproduce.budget: 12 CPU-minutes (measured)\n'
                '[train]\nsteps = 100\neval_every = 10\nbudget = "competent"\nearly_stop_metric = "exact_match"\n'
                '[sweep]\n"train.lr" = [1e-3, 1e-2]\n[protocol]\nselect = "train.lr"\n')
    text = protocol_page.section(t, runs, f.name, False)
    os.unlink(f.name)
    check("- **Protocol**: select lr" in text and "12 CPU-minutes" in text and "until competent" in text,
          f"the section states protocol, budget and budget policy ({text[:400]})")
    check("median 101, 100..102 over 12 run(s); 0 stopped before the cap" in text, f"steps used ({text[:600]})")
    rows = [ln for ln in text.splitlines() if ln.startswith("| a | 0.0")]
    check(len(rows) == 2 and "**selected** (validation)" in rows[0] and "papers' aggregation" in rows[1]
          and "selected" not in rows[1], f"the grid marks the selection and, apart, the papers' aggregation ({rows})")
    check("<details><summary>Held-out exact_match" in text and "50 45.0, 100 90.0" in text, "the per-seed curves")
    check("not recorded" in protocol_page.steps_text(None), "results from before the record say so")


def test_recipe_headers():
    for n in sorted(f[:-5] for f in os.listdir(RECIPES_DIR) if f.endswith(".toml")):
        config = os.path.join(RECIPES_DIR, n + ".toml")
        check(common.header_line(config, "protocol") != "", f"{n}: '# reproduce.protocol:' states its protocol")
        budget = common.header_line(config, "budget")
        check(re.search(r"\d[\d ]* CPU-minutes", budget) is not None, f"{n}: '# reproduce.budget:' in CPU-minutes")


def test_twin_trains_on_batches(pelab, tmp):
    """`pelab batches` -> pelab.torch_ref.load_batches -> the PyTorch twin, built from the file's config, takes
    optimizer steps on them (skipped without torch: Debian's /usr/bin/python3 has it)."""
    try:
        import tomllib
        import torch
        sys.path.insert(0, os.path.join(ROOT, "tests", "pytorch"))
        import pelab_ref as torch_ref  # python/pelab/torch_ref.py without the compiled module (tests/pytorch)
    except ImportError as e:
        print(f"skipped the twin check: {e}")
        return
    cfg = os.path.join(tmp, "twin.toml")
    with open(cfg, "w") as f:
        f.write('[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n[encoding]\nname = "rope"\n'
                '[task]\nname = "copy"\ntrain_len = 4\n[train]\nbatch_size = 8\n')
    out = os.path.join(tmp, "b.safetensors")
    p = subprocess.run([pelab, "batches", cfg, "--steps", "5", "--out", out], capture_output=True, text=True)
    check(p.returncode == 0, f"pelab batches exits 0 ({p.stderr})")
    batches, meta = torch_ref.load_batches(out)
    check(len(batches) == 5 and all(b["tokens"].shape[0] == 8 for b in batches), "5 batches of 8 rows")
    check(all(b["tokens"].shape == b["mask"].shape == b["positions"].shape for b in batches), "one (B, T) per field")
    mcfg, name, params = torch_ref.model_cfg(tomllib.loads(meta["config"]), int(meta["vocab"]),
                                             int(meta["train_seq_len"]), {})
    torch.manual_seed(0)
    model = torch_ref.Model(mcfg, name, params).double()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = [torch_ref.train_step(model, opt, b["tokens"], b["positions"], b["targets"], b["mask"], 3e-3, 1.0)[0]
              for b in batches]
    check(all(l == l and 0 < l < 10 for l in losses), f"the twin trains on pelab's stream: losses {losses}")
    p = subprocess.run([pelab, "batches", cfg, "--steps", "0", "--out", out + "2"], capture_output=True, text=True)
    check(p.returncode == 2 and "--steps 0" in p.stderr and not os.path.exists(out + "2"),
          f"--steps 0: exit 2 naming it, no file ({p.returncode}: {p.stderr})")


def main():
    pelab = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        test_real_sweep(pelab, tmp)
        test_twin_trains_on_batches(pelab, tmp)
    test_rule_and_section()
    test_recipe_headers()
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
