#!/usr/bin/env python3
"""Training from a notebook (docs/python.md#training-in-a-notebook): progress in the cell's output, an
evaluation callback that stops the run, the record as a DataFrame. Cells are marked `# %%` (Jupyter,
VS Code); run as a script it does the same:

    PYTHONPATH=build/python /usr/bin/python3 examples/training_in_a_notebook.py CONFIG --out DIR
"""
# %%
import argparse
import os

import pelab

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("config", nargs="?", default="experiments/configs/quick.toml")
p.add_argument("--out", default="runs/notebook")
a = p.parse_args()

# %% Progress lines go to sys.stdout: a notebook cell shows them (progress=print_line takes them instead).
# on_eval sees each periodic evaluation ([train] eval_every) and returns True to stop there, as an early
# stop does: a checkpoint, then the final evaluation at every eval length.
seen = []


def stop_when_learned(step, metrics):
    seen.append((step, metrics["token_acc"]))
    return metrics["token_acc"] >= 0.99


run = pelab.train(a.config, set={"encoding.name": "rope"}, out=os.path.join(a.out, "rope"), on_eval=stop_when_learned)
print("evaluations seen:", seen)

# %% The training record (metrics.jsonl) as a DataFrame: one row per logged step and per evaluation.
record = run.record
print(record[record.split == "train"][["step", "loss", "token_acc"]].tail())
print("final evaluation:", {n: round(r["token_acc"], 3) for n, r in run.eval.items()})
