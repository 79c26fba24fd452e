"""Null simulations: how often each rule claims an effect when there is none. A null table has the recipe's shape
(its [sweep] grid, lengths and a seed count), every group passing the competence gate, and seed-level scores beyond
training drawn from one pool for every treatment (positions, encodings, arms, formats, task levels), so that any
"reproduces" or "partly reproduces" is false. Pools (u in 0..1, put on the metric's scale): uniform; learned or
stuck (each seed near 0.05 or near 0.95, as zhou2024's seeds); narrow (0.5 ± 0.1); task effect (a difficulty per
block, the task or pair, shared by its treatments, ± 0.05 per seed). Once a page's results.csv is committed, the
pool "recipe" permutes the treatment labels of its own seed-level scores (accuracy recipes)."""
import os
import random

from . import common as c
from .recipes import RECIPES
from .table import Table, read_csv

POOLS = ("uniform", "learned or stuck", "narrow", "task effect")
DRAWS = 2000
SEED = 2044
MAX_RATE = 0.10  # each word that claims an effect: at most this often under the null
TREATMENT = {"format": ["task.bos", "task.eos"], "ruoss": ["train.positions"], "press": ["encoding.name"],
             "kazemnejad": ["encoding.name"], "cho2024": ["arm"], "mcleish2024": ["encoding.name"], "zhou2024": ["arm"],
             "deletang": ["train.positions", "task.name"]}
ARITH = {"cho2024": ("arm", ["coupled", "baseline"]), "mcleish2024": ("encoding.name", ["abacus", "none"]),
         "zhou2024": ("arm", ["fire_randomized", "rope"])}


def clip(x):
    return min(1.0, max(0.0, x))


def draw(rng, pool, base):
    if pool == "uniform":
        return rng.random()
    if pool == "learned or stuck":
        return clip(rng.gauss(0.95 if rng.random() < 0.5 else 0.05, 0.03))
    if pool == "narrow":
        return clip(rng.gauss(0.5, 0.1))
    return clip(base + rng.gauss(0.0, 0.05))


def recipe_seeds(config):
    """The recipe's seed count (its full setting's [sweep] train.seed)."""
    return len(c.load_config(config).get("sweep", {}).get("train.seed", [0]))


def shape(config):
    """The recipe's grid, training length and evaluation lengths beyond it."""
    cfg = c.load_config(config)
    task, ev = cfg.get("task", {}), cfg.get("eval", {})
    L = int(task.get("train_len", 8))
    ood = [x for x in ev.get("lengths", []) if x > L] or [L + 1]
    return {"sweep": cfg.get("sweep", {}), "train_len": L, "ood": ood}


def accuracy_table(rng, pool, keys, grid, ind, ood, seeds, chance, metric, block_of):
    """Every group of the grid gated in distribution (0.99..1.0); beyond it, per seed one u from the pool, the value
    chance + (1 − chance) u at the first length, falling by 10% of it per further length."""
    t, bases = Table(keys), {}
    for g in grid:
        base = bases.setdefault(block_of(g), rng.random())
        for s in range(seeds):
            t.add(g, s, metric, ind, 0.99 + 0.01 * rng.random(), chance, True)
            u = draw(rng, pool, base)
            for j, L in enumerate(ood):
                t.add(g, s, metric, L, chance + (1 - chance) * u * (1 - 0.1 * j), chance, False)
    return t


def grid_of(sh, *names):
    out = [()]
    for n in names:
        out = [g + (v,) for g in out for v in sh["sweep"][n]]
    return [tuple(str(x).lower() if isinstance(x, bool) else str(x) for x in g) for g in out]


def format_table(rng, pool, sh, seeds):
    """format: steps to 99% from the pool for every format (200..3000), the 2x accuracy from the pool for the formats
    with BOS, and `x SEP x` at chance ± 0.1 (its claim is "above chance", so its null is chance)."""
    t, L, ch = Table(["task.bos", "task.eos"]), sh["train_len"], 0.13
    base = rng.random()
    for g in grid_of(sh, "task.bos", "task.eos"):
        for s in range(seeds):
            t.add(g, s, "token_acc", L, 0.99 + 0.01 * rng.random(), ch, True)
            t.add(g, s, "steps_to_target", L, 200 + 2800 * draw(rng, pool, base), None, True)
            t.add(g, s, "reached", L, 1.0, None, True)
            if g == ("false", "absent"):  # centred on chance: a shared difficulty would move it off chance
                acc = ch + 0.2 * (draw(rng, pool, 0.5) - 0.5)
            else:
                acc = ch + (1 - ch) * draw(rng, pool, base)
            t.add(g, s, "token_acc", 2 * L, acc, ch, False)
    return t


def press_table(rng, pool, sh, seeds):
    """press: every encoding below the (synthetic) n-gram and falling inside L; the rise past L from the pool
    (−5% .. +150%), per seed."""
    t, L = Table(["encoding.name"]), sh["train_len"]
    base = rng.random()
    for (e,) in grid_of(sh, "encoding.name"):
        for s in range(seeds):
            inside = 2.0 + 0.01 * rng.random()
            t.add((e,), s, "loss", L, inside, None, True)
            rise = -0.05 + 1.55 * draw(rng, pool, base)
            for a in range(0, 4 * L, 32):
                v = inside + 0.3 if a + 32 <= L // 2 else inside if a + 32 <= L else inside * (1 + rise)
                t.add((e,), s, f"loss@{a}-{a + 32}", 4 * L, v, None, False)
    return t


def null_table(name, rng, pool, sh, seeds):
    if name == "format":
        return format_table(rng, pool, sh, seeds)
    if name == "press":
        return press_table(rng, pool, sh, seeds)
    L, ood = sh["train_len"], sh["ood"]
    if name in ARITH:
        key, groups = ARITH[name]
        return accuracy_table(rng, pool, [key], [(g,) for g in groups], L, ood, seeds, 0.0, "exact_match", lambda g: 0)
    if name == "ruoss":
        grid = grid_of(sh, "task.name", "encoding.name", "train.positions")
        return accuracy_table(rng, pool, ["task.name", "encoding.name", "train.positions"], grid, L, ood, seeds, 0.1,
                              "token_acc", lambda g: g[:2])
    if name == "kazemnejad":
        grid = grid_of(sh, "task.name", "encoding.name")
        return accuracy_table(rng, pool, ["task.name", "encoding.name"], grid, L, ood, seeds, 0.0, "exact_match",
                              lambda g: g[0])
    grid = [g + ("0.001",) for g in grid_of(sh, "task.name", "encoding.name", "train.positions")]
    return accuracy_table(rng, pool, ["task.name", "encoding.name", "train.positions", "train.lr"], grid, L, [L + 1],
                          seeds, 0.5, "token_acc", lambda g: g[:2])


NULL_CTX = {"ngram": {"losses": {4: 2.3}, "best": 4, "curve": [2.3] * 512}}


def recipe_table(rng, t, name):
    """The pool "recipe": the committed table with its treatment labels permuted within each block (the groups that
    differ only in the treatment keys), whole seeds moving together, every group gated (in distribution 1.0)."""
    treat = [t.keys.index(k) for k in TREATMENT[name] if k in t.keys]
    blocks = {}
    for g in t.groups:
        blocks.setdefault(tuple(x for i, x in enumerate(g) if i not in treat), []).append(g)
    out = Table(t.keys)
    for members in blocks.values():
        units = [(g, s) for g in members for s in t.seed_ids()]
        shuffled = units[:]
        rng.shuffle(shuffled)
        for (g, s), (g2, s2) in zip(units, shuffled):
            for (gg, m, L), v in t.vals.items():
                if gg == g2 and s2 in v:
                    out.add(g, s, m, L, 1.0 if t.ind[L] else v[s2], t.chance.get((gg, m, L)), t.ind[L])
    return out


def rates(name, config, seeds, pool, draws=DRAWS, seed=SEED, committed=None):
    """{word: share of draws} of the recipe's rule under one null pool."""
    rng, judge = random.Random(seed), RECIPES[name]["judge"]
    sh, counts = shape(config), {}
    real = read_csv(committed) if pool == "recipe" else None
    for _ in range(draws):
        t = recipe_table(rng, real, name) if real is not None else null_table(name, rng, pool, sh, seeds)
        w = judge(t, dict(NULL_CTX, config=config, quick=0, name=name))["word"]
        counts[w] = counts.get(w, 0) + 1
    return {w: n / draws for w, n in counts.items()}


def table_markdown(recipes_dir, results_dir, draws=DRAWS, recipe_only=False):
    """The null table of docs/reproductions.md, and the failures: a word that claims an effect more often than
    MAX_RATE at the recipe's seed count (the rows with 3 seeds, the committed pages' count, are shown beside it)."""
    rows, failures = [], []
    for name in RECIPES:
        config = os.path.join(recipes_dir, name + ".toml")
        committed = os.path.join(results_dir, name + ".results.csv")
        pools = POOLS + (("recipe",) if os.path.isfile(committed) and name not in ("format", "press") else ())
        for n in [recipe_seeds(config)] if recipe_only else sorted({3, recipe_seeds(config)}):
            for pool in pools:
                r = rates(name, config, n, pool, draws, committed=committed)
                checked = n == recipe_seeds(config)
                rows.append([name, f"{n}{' (recipe)' if checked else ''}", pool]
                            + [f"{100 * r.get(w, 0.0):.1f}" for w in (c.REPRODUCES, c.PARTLY, c.NOT, c.NOT_COMPARABLE)])
                failures += [f"{name}, {n} seeds, pool {pool}: '{w}' {100 * r.get(w, 0):.1f}% > {100 * MAX_RATE:.0f}%"
                             for w in c.EFFECT_WORDS if checked and r.get(w, 0.0) > MAX_RATE]
    head = ["recipe", "seeds", "pool", "reproduces (%)", "partly (%)", "does not (%)", "not comparable (%)"]
    return c.md_table(head, rows), failures
