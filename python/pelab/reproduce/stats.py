"""Seed-level statistics of the verdict rules: means and sample stds, the tie rule, ranks, Kendall's tau with its
exact permutation test, order-statistic and bootstrap intervals. Standard library only."""
import itertools
import math

ALPHA = 0.05  # rank claims: P(a random order has tau >= the observed tau) < ALPHA


def mean_sd(v):
    """(mean, sample std or None, n) of a list of numbers."""
    n = len(v)
    if n == 0:
        return None, None, 0
    m = sum(v) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1)) if n > 1 else None
    return m, sd, n


def median(v):
    s = sorted(v)
    n = len(s)
    return None if n == 0 else s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def separated(a, b):
    """a above b beyond the seed spread: mean_a - std_a > mean_b + std_b (both with >= 2 seeds). a, b: (mean, std, n)."""
    if a[0] is None or b[0] is None or a[2] < 2 or b[2] < 2:
        return False
    return a[0] - a[1] > b[0] + b[1]


def tie_ranks(stats):
    """Rank 1 = best (highest mean); items whose mean ± std overlap the next one's (chained), or that have fewer than
    2 seeds, share a group and its average rank. stats: {item: (mean, std, n)}, mean None = last. -> ({item: rank},
    [[items of a group], ...] best group first)."""
    order = sorted(stats, key=lambda k: (stats[k][0] is None, -(stats[k][0] or 0.0)))
    groups = []
    for k in order:
        if groups and (stats[k][0] is None and stats[groups[-1][-1]][0] is None
                       or stats[k][0] is not None and not separated(stats[groups[-1][-1]], stats[k])):
            groups[-1].append(k)
        else:
            groups.append([k])
    ranks, i = {}, 0
    for g in groups:
        for k in g:
            ranks[k] = i + (len(g) + 1) / 2
        i += len(g)
    return ranks, groups


def average_ranks(scores):
    """Rank 1 = best (highest); None ranks after every score; ties share the average rank."""
    order = sorted(scores, key=lambda k: (scores[k] is None, -(scores[k] or 0)))
    ranks, i = {}, 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def kendall_tau(a, b):
    """Kendall's tau-a of two score dicts over the same keys (tied pairs count 0)."""
    keys = list(a)
    conc = disc = 0
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            s = (a[keys[i]] - a[keys[j]]) * (b[keys[i]] - b[keys[j]])
            conc += s > 0
            disc += s < 0
    n = len(keys) * (len(keys) - 1) / 2
    return (conc - disc) / n if n else 0.0


def tau_p_value(a, b):
    """P(tau(random order, b) >= tau(a, b)): a's values (ties kept) assigned to the keys in every one of the n! ways."""
    keys = list(a)
    observed = kendall_tau(a, b)
    hits = total = 0
    for perm in itertools.permutations([a[k] for k in keys]):
        total += 1
        hits += kendall_tau(dict(zip(keys, perm)), b) >= observed - 1e-12
    return hits / total


def tau_tail(n):
    """{tau: P(tau of a random order of n tie-free items with a fixed order >= tau)}, exact over the n! orders."""
    ref = {i: float(n - i) for i in range(n)}
    taus = [round(kendall_tau({i: float(p[i]) for i in range(n)}, ref), 9) for p in itertools.permutations(range(n))]
    return {t: sum(x >= t for x in taus) / len(taus) for t in sorted(set(taus))}


def rank_rule_text(n):
    """The rank rule in words, with this n's exact numbers."""
    tail = tau_tail(n)
    need = min((t for t, p in tail.items() if p < ALPHA), default=None)
    at06 = next((p for t, p in sorted(tail.items()) if t >= 0.6 - 1e-9), 0.0)
    return (f"the order holds when a random order of the {n} items reaches the observed Kendall tau (tau-a, tied pairs "
            f"count 0) with probability < {ALPHA:g}, exact over all {math.factorial(n)} orders (ties kept as observed)"
            + ("" if need is None else f"; for {n} items without ties that needs tau ≥ {need:.2f}")
            + f" (tau ≥ 0.60 happens by chance with probability {at06:.3f})")


def percentile(sorted_v, q):
    """The q-quantile (0..1) of sorted values, linear between order statistics."""
    if not sorted_v:
        return None
    x = q * (len(sorted_v) - 1)
    i = int(math.floor(x))
    j = min(i + 1, len(sorted_v) - 1)
    return sorted_v[i] + (x - i) * (sorted_v[j] - sorted_v[i])


def interval(values, level=0.95):
    """Percentile interval of bootstrap values (None entries left out) -> (low, high) or None."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    return percentile(v, (1 - level) / 2), percentile(v, 1 - (1 - level) / 2)


def permutation_p(a, b, exact_limit=20000, draws=2000, seed=0):
    """One-sided permutation test of mean(a) > mean(b): P(a random split of a + b into groups of len(a) and len(b)
    has a difference of means >= the observed one). Exact over all splits when there are at most exact_limit of them,
    else over `draws` random splits (fixed seed). None when a or b is empty."""
    if not a or not b:
        return None
    pool, k = list(a) + list(b), len(a)
    total = sum(pool)
    stat = lambda s: s / k - (total - s) / len(b)
    observed = stat(sum(a)) - 1e-12
    if math.comb(len(pool), k) <= exact_limit:
        hits = n = 0
        for idx in itertools.combinations(range(len(pool)), k):
            n += 1
            hits += stat(sum(pool[i] for i in idx)) >= observed
        return hits / n
    import random
    rng = random.Random(seed)
    hits = sum(stat(sum(rng.sample(pool, k))) >= observed for _ in range(draws))
    return (hits + 1) / (draws + 1)
