"""examples/analysis.py on a tiny sweep shaped like the quick comparison (four encodings x two seeds):
its table's means, sample stds and counts equal summary.csv's, and it writes the table and both plots."""

import importlib.util
import os
import subprocess
import sys

import helpers

pelab = helpers.import_pelab()
helpers.require("pandas", "matplotlib")
EXAMPLE = os.path.join(helpers.SOURCE_DIR, "examples", "analysis.py")


def main():
    import pandas as pd

    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp, sweep={"encoding.name": ["none", "learned", "sinusoidal", "rope"],
                                                 "train.seed": [0, 1]})
        sweep_dir = os.path.join(tmp, "quick")
        helpers.cli("sweep", config, "--jobs", "2", "--out", sweep_dir, "--no-report")
        helpers.cli("report", sweep_dir, "--no-plots")

        spec = importlib.util.spec_from_file_location("analysis", EXAMPLE)
        analysis = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(analysis)
        table, stats = analysis.length_table(pelab.results(sweep_dir))
        summary = pd.read_csv(os.path.join(sweep_dir, "summary.csv"), keep_default_na=False, na_values={"mean": [""], "std": [""]})
        summary = summary[summary.metric == "token_acc"].set_index(["encoding.name", "length"])
        assert len(stats) == len(summary) == 4 * 3, (len(stats), len(summary))
        for (enc, n), s in stats.iterrows():
            row = summary.loc[(enc, n)]
            assert int(s["count"]) == row["n"], (enc, n)
            if row["n"]:
                assert abs(s["mean"] - row["mean"]) < 1e-12 and abs(s["std"] - row["std"]) < 1e-12, (enc, n, s, row)
        assert list(table.index) == ["none", "learned", "sinusoidal", "rope", "chance"]
        assert table.loc["learned"].iloc[-1] == "n/a"

        out = os.path.join(tmp, "python")
        env = dict(os.environ, MPLBACKEND="Agg")
        subprocess.run([sys.executable, EXAMPLE, sweep_dir, "--out", out], check=True, env=env)
        for name in ("table.md", "length_generalization.png", "attention_2x.png"):
            path = os.path.join(out, name)
            assert os.path.getsize(path) > 100, path
        with open(os.path.join(out, "attention_2x.png"), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
