"""Seed-level scores, the one input of every verdict rule: per group (the values of the sweep's grouping keys,
and the arm), metric and evaluation length, one value per seed, with the chance level and whether the length is
in distribution. Read from a sweep's results.csv (per arm), written to and read from the results CSV committed
beside a page. Standard library only."""
import csv
import os


class PageError(Exception):
    pass


class Table:
    """{(group, metric, length): {seed: value}}; group: a tuple of the values of `keys`, in that order."""

    def __init__(self, keys):
        self.keys = list(keys)
        self.vals, self.chance, self.ind, self.groups = {}, {}, {}, []
        self._groups_set, self._find = set(), {}
        self._names = [k.replace(".", "_", 1) for k in self.keys]

    def add(self, group, seed, metric, length, value, chance=None, ind=False):
        group = tuple(group)
        if group not in self._groups_set:
            self._groups_set.add(group)
            self.groups.append(group)
        self.vals.setdefault((group, metric, length), {})[seed] = value
        if chance is not None or (group, metric, length) not in self.chance:
            self.chance[(group, metric, length)] = chance
        self.ind[length] = ind

    def key_values(self, key):
        """The distinct values of one grouping key, in order of appearance."""
        if (key, len(self.groups)) not in self._find:
            i = self.keys.index(key) if key in self.keys else None
            self._find[(key, len(self.groups))] = [] if i is None else list(dict.fromkeys(g[i] for g in self.groups))
        return self._find[(key, len(self.groups))]

    def group(self, **kw):
        """The group whose keys match kw (keys written with '_' for the first '.'), or None."""
        names = self._names
        if len(kw) == len(names):  # every key given: no search
            g = tuple(kw.get(n) for n in names)
            return g if g in self._groups_set else None
        want = tuple(sorted(kw.items()))
        if want not in self._find:
            names = {k.replace(".", "_", 1): i for i, k in enumerate(self.keys)}
            hit = [g for g in self.groups if all(k in names and g[names[k]] == v for k, v in kw.items())]
            self._find[want] = hit[0] if hit else None
        return self._find[want]

    def seeds(self, metric, length, **kw):
        return self.vals.get((self.group(**kw), metric, length), {})

    def cell(self, metric, length, **kw):
        """mean, sample std, n, chance of one group, metric and length over its seeds; None when absent."""
        g = self.group(**kw)
        v = self.vals.get((g, metric, length))
        if not v:
            return None
        x = list(v.values())
        n = len(x)
        m = sum(x) / n
        sd = (sum((a - m) ** 2 for a in x) / (n - 1)) ** 0.5 if n > 1 else None
        return {"mean": m, "std": sd, "n": n, "chance": self.chance.get((g, metric, length)), "values": x}

    def lengths(self, in_distribution=None):
        return sorted(L for L, ind in self.ind.items() if in_distribution is None or ind == in_distribution)

    def seed_scores(self, metric, lens, **kw):
        """Per seed, the mean of `metric` over the lengths `lens` (a seed missing one of them is left out)."""
        g = self.group(**kw)
        per = [self.vals.get((g, metric, L), {}) for L in lens]
        if not per or not per[0]:
            return {}
        if len(per) == 1:
            return dict(per[0])
        return {s: sum(p[s] for p in per) / len(per) for s in per[0] if all(s in p for p in per)}

    def seed_ids(self):
        return sorted({s for v in self.vals.values() for s in v}, key=str)

    def fewest_seeds(self, metric=None):
        """The fewest seeds of any group at any in-distribution length (of `metric` when given)."""
        n = [len(v) for (g, m, L), v in self.vals.items() if self.ind.get(L) and (metric is None or m == metric)]
        return min(n, default=0)

    def resample(self, draw):
        """A table whose seed i is seed draw[i] of this one (a bootstrap resample of the seeds, kept paired across
        groups: seed s of every group is one draw)."""
        t = Table(self.keys)
        t.groups, t._groups_set, t.chance, t.ind = self.groups, self._groups_set, self.chance, self.ind
        t._find = self._find  # the same groups: the same lookups
        for k, v in self.vals.items():
            t.vals[k] = {i: v[s] for i, s in enumerate(draw) if s in v}
        return t


def split_keys(fieldnames, path):
    """results.csv's grouping keys: the columns between `run` and `seed`."""
    if not fieldnames or fieldnames[0] != "run" or "seed" not in fieldnames:
        raise PageError(f"{path}: expected the columns run, <grouping keys>, seed, ..., got {fieldnames}")
    return fieldnames[1:fieldnames.index("seed")]


def read_results(run_dir, table=None, arm=None):
    """A sweep's results.csv (`pelab report`) into a Table (a new one, or `table`, under `arm`). Rows of the
    operand grid (len_a set) and rows without a value are left out."""
    path = os.path.join(run_dir, "results.csv")
    if not os.path.isfile(path):
        raise PageError(f"{path}: missing (run the recipe first; `pelab report` writes it)")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        keys = split_keys(reader.fieldnames, path)
        t = table if table is not None else Table((["arm"] if arm is not None else []) + keys)
        if t.keys != (["arm"] if arm is not None else []) + keys:
            raise PageError(f"{path}: grouping keys {keys} differ from the other arms' {t.keys[1:]}")
        for i, r in enumerate(reader, start=2):
            if r.get("len_a") or r.get("value", "") == "":
                continue
            try:
                group = ([arm] if arm is not None else []) + [r[k] for k in keys]
                t.add(group, int(r["seed"]), r["metric"], int(r["eval_len"]), float(r["value"]),
                      float(r["chance"]) if r.get("chance") else None, r["in_distribution"] == "true")
            except (ValueError, KeyError) as e:
                raise PageError(f"{path}:{i}: {e}")
    if not t.groups:
        raise PageError(f"{path}: no rows with a value")
    return t


def write_csv(t, path):
    """The table as the CSV committed beside a page: keys..., seed, eval_len, in_distribution, metric, value, chance."""
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(t.keys + ["seed", "eval_len", "in_distribution", "metric", "value", "chance"])
        for (g, m, L), v in t.vals.items():
            c = t.chance.get((g, m, L))
            for s, x in v.items():
                w.writerow(list(g) + [s, L, "true" if t.ind[L] else "false", m, repr(x), "" if c is None else repr(c)])
    os.replace(path + ".tmp", path)


def read_csv(path):
    """A CSV written by write_csv back into a Table."""
    if not os.path.isfile(path):
        raise PageError(f"{path}: missing (the page's committed seed-level results)")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        names = reader.fieldnames or []
        if "seed" not in names:
            raise PageError(f"{path}: expected the columns <keys>, seed, eval_len, in_distribution, metric, value, chance")
        keys = names[:names.index("seed")]
        t = Table(keys)
        for i, r in enumerate(reader, start=2):
            try:
                t.add([r[k] for k in keys], int(r["seed"]), r["metric"], int(r["eval_len"]), float(r["value"]),
                      float(r["chance"]) if r["chance"] else None, r["in_distribution"] == "true")
            except (ValueError, KeyError, TypeError) as e:
                raise PageError(f"{path}:{i}: {e}")
    return t
