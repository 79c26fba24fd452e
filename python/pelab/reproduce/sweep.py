"""A recipe's sweep directory (scripts/reproduce.sh) read into a Table: results.csv per arm, and the extras of
two rules (format's steps_to_target.csv, press's per-position losses from each run's eval.json); its provenance
(each run's eval.json `provenance`, reproduce_times.txt); and the check that the sweep is the recipe's."""
import csv
import json
import os

from . import common as c
from .table import PageError, Table, read_results


def read_steps(run_dir, t):
    """format: steps_to_target.csv as the metrics steps_to_target and reached, at the training size."""
    path = os.path.join(run_dir, "steps_to_target.csv")
    if not os.path.isfile(path):
        raise PageError(f"{path}: missing")
    train_len = min(t.lengths(True))
    with open(path, newline="") as f:
        for i, r in enumerate(csv.DictReader(f), start=2):
            try:
                g, seed, reached = [r[k] for k in t.keys], int(r["seed"]), r["reached"] == "true"
                t.add(g, seed, "steps_to_target", train_len, float(r["steps_to_target"] if reached else r["steps"]), None, True)
                t.add(g, seed, "reached", train_len, 1.0 if reached else 0.0, None, True)
            except (KeyError, ValueError) as e:
                raise PageError(f"{path}:{i}: {e}")


def eval_jsons(run_dir, name="eval.json"):
    """[(path, its JSON)] of every run directory (a child of run_dir holding `name`: eval.json, or a named
    evaluation's eval-NAME.json)."""
    out = []
    for d in sorted(os.listdir(run_dir)):
        p = os.path.join(run_dir, d, name)
        if os.path.isfile(p):
            try:
                with open(p) as f:
                    out.append((p, json.load(f)))
            except (json.JSONDecodeError, OSError) as e:
                raise PageError(f"{p}: {e}")
    return out


def read_buckets(run_dir, t):
    """press: each run's per-position losses at its longest evaluated length, as metrics loss@FROM-TO."""
    n = 0
    for p, j in eval_jsons(run_dir):
        a = j.get("assignment", {})
        ok = [r for r in j.get("results", []) if r.get("status") == "ok" and r.get("buckets")]
        if "encoding.name" not in a or not ok:
            continue
        longest = max(ok, key=lambda r: r["length"])
        g = [a.get(k) for k in t.keys]
        for b in longest["buckets"]:
            if b.get("loss") is not None:
                t.add(g, int(a.get("train.seed", 0)), f"loss@{b['from']}-{b['to']}", int(longest["length"]),
                      float(b["loss"]), None, False)
                n += 1
    if n == 0:
        raise PageError(f"{run_dir}: no eval.json with per-position buckets")


def read_sweep(name, run_dir, config):
    """The recipe's Table from its sweep directory (one sub-directory per arm for a recipe with arms)."""
    arms = c.recipe_arms(config)
    if arms:
        t = None
        for arm, _ in arms:
            t = read_results(os.path.join(run_dir, arm), t, arm)
    else:
        t = read_results(run_dir)
    if name == "format":
        read_steps(run_dir, t)
    if name == "press":
        read_buckets(run_dir, t)
    return t


def flatten(d, prefix=()):
    """{("section", "sub", "key"): value} of a TOML table; the [sweep] table's dotted keys stay one key."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and prefix != ("sweep",):
            out.update(flatten(v, prefix + (k,)))
        else:
            out[prefix + (k,)] = v
    return out


def parse_sets(text):
    """The `--set KEY=VALUE` pairs of a reproduce.quick / reproduce.arm line -> {path tuple: value}."""
    import shlex
    import tomllib
    words, out = shlex.split(text), {}
    for i, w in enumerate(words):
        if w != "--set" or i + 1 >= len(words) or "=" not in words[i + 1]:
            continue
        key, raw = words[i + 1].split("=", 1)
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw  # a bare word, as pelab reads it: a string
        out[("sweep", key[6:]) if key.startswith("sweep.") else tuple(key.split("."))] = value
    return out


def same(want, got, key):
    if isinstance(want, bool) or isinstance(got, bool):
        return want == got
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return abs(want - got) <= 1e-12 * max(1.0, abs(want))
    if isinstance(want, list) and isinstance(got, list):
        if key[-1] == "length_range":  # written with its step: [lo, hi, step]
            got = got[:len(want)]
        return len(want) == len(got) and all(same(a, b, key) for a, b in zip(want, got))
    return want == got


def check_sweep(run_dir, config, overrides):
    """Refuse a sweep directory that is not this recipe's: every setting of the recipe config, with the variant's and
    arm's overrides, must have that value in the sweep's sweep.toml (what `pelab sweep` ran; [output] aside)."""
    import tomllib
    path = os.path.join(run_dir, "sweep.toml")
    if not os.path.isfile(path):
        raise PageError(f"{path}: missing: {run_dir} is not a sweep directory made by `pelab sweep`")
    try:
        with open(path, "rb") as f:
            got = flatten(tomllib.load(f))
    except tomllib.TOMLDecodeError as e:
        raise PageError(f"{path}: {e}")
    want = flatten(c.load_config(config))
    want.update(parse_sets(overrides))
    bad = [(k, v, got.get(k, "(absent)")) for k, v in want.items() if k[0] != "output" and not same(v, got.get(k), k)]
    if bad:
        shown = "; ".join(f"{'.'.join(k)} = {v!r} in the recipe, {g!r} in the sweep" for k, v, g in bad[:4])
        raise PageError(f"{run_dir} is not the sweep of {os.path.basename(config)} with the overrides "
                        f"'{overrides.strip() or 'none'}': {shown}" + (f" (and {len(bad) - 4} more)" if len(bad) > 4 else ""))
