#!/usr/bin/env python3
"""The quick comparison's table and plot rebuilt in Python from pelab.results(), with pandas and matplotlib,
and one model's attention map at twice its training length (docs/python.md).

    ./build/pelab sweep experiments/configs/quick.toml --jobs 2
    PYTHONPATH=build/python /usr/bin/python3 examples/analysis.py runs/quick --out runs/quick/python

Writes OUT/table.md (token accuracy in %, mean ± sample std over seeds (n), a chance row: the table of
runs/quick/summary.md), OUT/length_generalization.png and OUT/attention_2x.png.
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
import pandas as pd

import pelab


def group_keys(df):
    """The swept keys but the seed: the columns between "run" and "seed"."""
    cols = list(df.columns)
    return cols[cols.index("run") + 1:cols.index("seed")]


def length_table(df, metric="token_acc"):
    """One row per group, one column per eval length: mean ± sample std (n) in %, "n/a" where every seed
    was n/a; in-distribution lengths starred; a chance row."""
    d = df[df.metric == metric]
    keys = group_keys(d)
    stats = d.groupby(keys + ["eval_len"], sort=False)["value"].agg(["mean", "std", "count"])
    stats["std"] = stats["std"].fillna(0.0)  # one seed: no spread

    def cell(r):
        return "n/a" if r["count"] == 0 else f"{100 * r['mean']:.1f} ± {100 * r['std']:.1f} ({int(r['count'])})"

    table = stats.apply(cell, axis=1).unstack("eval_len")
    table = table.reindex(pd.unique(d.set_index(keys).index))  # grid order
    chance = d.groupby("eval_len")["chance"].first()
    table.loc["chance"] = [f"{100 * chance[n]:.1f}" for n in table.columns]
    in_dist = d.groupby("eval_len")["in_distribution"].first()
    table.columns = [f"{n}*" if in_dist[n] else str(n) for n in table.columns]
    return table, stats


def to_markdown(table):
    """A markdown table: the group column left-aligned, the lengths right-aligned."""
    name = table.index.name or ""
    head = [name] + list(table.columns)
    rows = [[str(i)] + list(r) for i, r in zip(table.index, table.values)]
    widths = [max(len(x[c]) for x in [head] + rows) for c in range(len(head))]
    line = lambda xs: "| " + " | ".join(x.ljust(w) if c == 0 else x.rjust(w) for c, (x, w) in enumerate(zip(xs, widths))) + " |"
    rule = "| " + " | ".join("-" * w if c == 0 else "-" * (w - 1) + ":" for c, w in enumerate(widths)) + " |"
    return "\n".join([line(head), rule] + [line(r) for r in rows])


def plot_lengths(stats, df, path, metric="token_acc"):
    """The metric against eval length per group, ± std band, chance dashed, the training length dotted."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    keys = list(stats.index.names[:-1])
    for group, s in stats.groupby(level=keys, sort=False):
        s = s.droplevel(keys)[lambda x: x["count"] > 0]
        label = group if isinstance(group, str) else ", ".join(map(str, group))
        line, = ax.plot(s.index, 100 * s["mean"], marker="o", label=label)
        ax.fill_between(s.index, 100 * (s["mean"] - s["std"]), 100 * (s["mean"] + s["std"]), color=line.get_color(),
                        alpha=0.15)
    chance = df[df.metric == metric].groupby("eval_len")["chance"].first()
    ax.plot(chance.index, 100 * chance, "k--", linewidth=1, label="chance")
    ax.axvline(df["train_len"].max(), color="grey", linestyle=":", label="training length")
    ax.set_xlabel("eval length (symbols)")
    ax.set_ylabel("token accuracy (%)")
    ax.set_ylim(0, 101)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_attention(sweep_dir, df, path, encoding="rope"):
    """Every head of the last layer of one run (the first with `encoding`, else the first run) on a held-out
    example of twice the training length."""
    runs = df[df["encoding.name"] == encoding]["run"] if "encoding.name" in df.columns else df["run"]
    run = (runs if len(runs) else df["run"]).iloc[0]
    model = pelab.Run(os.path.join(sweep_dir, run)).model()
    n = 2 * model.train_len
    example = model.examples(n, count=1)
    att = model.attention(example["tokens"], layer=-1, positions=example["positions"])  # (1, H, T, T)
    H, T = att.shape[1], att.shape[2]
    fig, axes = plt.subplots(1, H, figsize=(3.2 * H, 3.4), squeeze=False)
    for h in range(H):
        ax = axes[0, h]
        ax.imshow(att[0, h], cmap="viridis", vmin=0, vmax=1)
        ax.axvline(model.train_seq_len - 0.5, color="white", linewidth=0.8)  # past here: longer than training
        ax.set_title(f"head {h}")
        ax.set_xlabel("key position")
    axes[0, 0].set_ylabel("query position")
    fig.suptitle(f"{run}\nlast layer at problem size {n} ({T} tokens; white line: the training length)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep_dir", nargs="?", default="runs/quick")
    ap.add_argument("--out", help="output directory (default: SWEEP_DIR/python)")
    ap.add_argument("--encoding", default="rope", help="whose attention to draw (default: rope)")
    a = ap.parse_args()
    out = a.out or os.path.join(a.sweep_dir, "python")
    os.makedirs(out, exist_ok=True)

    df = pelab.results(a.sweep_dir)
    table, stats = length_table(df)
    markdown = to_markdown(table)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(markdown + "\n")
    print(markdown)
    plot_lengths(stats, df, os.path.join(out, "length_generalization.png"))
    run = plot_attention(a.sweep_dir, df, os.path.join(out, "attention_2x.png"), a.encoding)
    print(f"wrote {out}/table.md, length_generalization.png, attention_2x.png ({run})")


if __name__ == "__main__":
    main()
