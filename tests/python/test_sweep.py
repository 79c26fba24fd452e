"""A sweep started from Python writes the same files as `pelab sweep` (eval.json modulo timings, the same
results.csv), and pelab.results() gives results.csv's rows (the values bit for bit)."""

import json
import os
import sys

import helpers

pelab = helpers.import_pelab()
helpers.require("pandas")

TIMINGS = {"train_seconds", "eval_seconds"}
GRID = {"encoding.name": ["none", "learned", "rope"], "train.seed": [0, 1]}


def eval_files(sweep_dir):
    out = {}
    for cell in sorted(os.listdir(sweep_dir)):
        path = os.path.join(sweep_dir, cell, "eval.json")
        if os.path.exists(path):
            with open(path) as f:
                out[cell] = {k: v for k, v in json.load(f).items() if k not in TIMINGS}
    return out


def read(path):
    with open(path) as f:
        return f.read()


def main():
    import pandas as pd

    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp, sweep=GRID)
        by_cli, by_python = os.path.join(tmp, "cli"), os.path.join(tmp, "python")
        helpers.cli("sweep", config, "--jobs", "2", "--out", by_cli, "--set", "train.steps=30")
        assert pelab.sweep(config, jobs=2, out=by_python, set={"train.steps": 30}) == by_python

        cli_evals, python_evals = eval_files(by_cli), eval_files(by_python)
        assert len(cli_evals) == 6 and cli_evals.keys() == python_evals.keys(), (cli_evals.keys(), python_evals.keys())
        for cell in cli_evals:
            assert cli_evals[cell] == python_evals[cell], cell
        for f in ("results.csv", "summary.csv", "steps_to_target.csv", "sweep.toml"):
            assert read(os.path.join(by_cli, f)) == read(os.path.join(by_python, f)).replace(by_python, by_cli), f

        # pelab.results() round-trips results.csv: the same rows, columns, types and values.
        df = pelab.results(by_python)
        csv = pd.read_csv(os.path.join(by_python, "results.csv"), keep_default_na=False,
                          na_values={"value": [""], "chance": [""], "len_a": [""], "len_b": [""]},
                          dtype={"len_a": "Int64", "len_b": "Int64"}, float_precision="round_trip")
        pd.testing.assert_frame_equal(df, csv, check_exact=True)
        assert pelab.results_csv(by_python) == read(os.path.join(by_python, "results.csv"))
        assert list(df.columns[:2]) == ["run", "encoding.name"] and "train.seed" not in df.columns
        assert len(df) == 6 * 3 * 3  # runs x eval lengths x metrics
        na = df[df["value"].isna()]
        assert set(na["encoding.name"]) == {"learned"} and (na["na_reason"] != "").all() and (na["eval_len"] == 8).all()
        rows = pelab.results(by_python, frame=False)
        assert len(rows) == len(df) and rows[0]["run"] == df["run"][0]

        # Re-running resumes: every cell is finished, nothing is trained again.
        assert pelab.sweep(config, jobs=2, out=by_python, set={"train.steps": 30}) == by_python
        assert eval_files(by_python) == python_evals
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
