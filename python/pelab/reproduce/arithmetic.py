"""cho2024, mcleish2024, zhou2024: exact match on addition beyond the training length, a method against the same
model without it. Claim A: the method's exact match, aggregated over seeds as the paper does, stays at or above
the paper's bar up to a reach, reported as a fraction of the paper's reach. Claim B: beyond training the method
is above every baseline that passes the gate, beyond the seed spread."""
from . import common as c
from .stats import mean_sd, median, separated
from .table import PageError

REACH_FULL = 0.5  # claim A holds when the reach is >= half the paper's (as a multiple of the training length)


def facts_of(t, key, groups):
    """Per group: the gate on exact match at the largest training length; per length (that one and beyond) the
    seeds' values, (mean, sample std, n), median, best, worst; the seed score (mean over the lengths beyond)."""
    ind, ood = max(t.lengths(True)), t.lengths(False)
    kw = key.replace(".", "_", 1)
    out = {}
    for g in groups:
        cell = t.cell("exact_match", ind, **{kw: g})
        ok, thr = c.gate_accuracy(cell)
        per = {}
        for L in [ind] + ood:
            v = list(t.seeds("exact_match", L, **{kw: g}).values())
            per[L] = {"stats": mean_sd(v), "median": median(v), "best": max(v, default=None),
                      "worst": min(v, default=None), "seeds": v}
        score = mean_sd(list(t.seed_scores("exact_match", ood, **{kw: g}).values()))
        out[g] = {"cell": cell, "gate": ok, "thr": thr, "per": per, "score": score}
    return ind, ood, out


def claims(ind, ood, facts, method, bar, agg, paper_ratio):
    """Claim A (reach, its ratio to the training length and its fraction of the paper's ratio; held 1, 0.5 or 0) and
    claim B (the method's seed score separated above each baseline that passes the gate; None without one)."""
    f = facts[method]
    value = {L: (f["per"][L]["stats"][0] if agg == "mean" else f["per"][L][agg]) for L in ood}
    reach = None
    for L in ood:
        if value[L] is None or value[L] < bar:
            break
        reach = L
    ratio = None if reach is None else reach / ind
    frac = None if ratio is None else ratio / paper_ratio
    a = 0 if reach is None else 1 if frac >= REACH_FULL else 0.5
    sep, failed = {}, []
    for b in facts:
        if b == method:
            continue
        if not facts[b]["gate"]:
            failed.append(b)
        else:
            sep[b] = separated(f["score"], facts[b]["score"])
    return {"reach": reach, "value": value, "ratio": ratio, "frac": frac, "a": a, "sep": sep, "failed": failed,
            "b": None if not sep else all(sep.values())}


def word_of(method_gate, cl):
    """reproduces: A holds and B; partly: B with A half or not met, or A without a comparable baseline; does not
    reproduce: a comparable baseline the method does not beat, or nothing; not comparable: the method failed the gate."""
    if not method_gate:
        return c.NOT_COMPARABLE
    if cl["b"] is None:
        return c.PARTLY if cl["a"] > 0 else c.NOT
    if cl["b"]:
        return c.REPRODUCES if cl["a"] == 1 else c.PARTLY
    return c.NOT


def judge(t, spec):
    """spec: key, method, bar, agg, paper_ratio. -> facts with word and numbers."""
    groups = t.key_values(spec["key"])
    if spec["method"] not in groups:
        raise PageError(f"no {spec['key']} = {spec['method']} in the results")
    ind, ood, facts = facts_of(t, spec["key"], groups)
    cl = claims(ind, ood, facts, spec["method"], spec["bar"], spec["agg"], spec["paper_ratio"])
    numbers = {f"{spec['method']} {spec['agg']} at {L} (%)": _p(cl["value"][L]) for L in ood}
    for b in facts:
        if b != spec["method"]:
            ms, bs = facts[spec["method"]]["score"][0], facts[b]["score"][0]
            numbers[f"{spec['method']} − {b}, mean over seeds of the mean over {ood[0]}–{ood[-1]} (points)"] = \
                None if ms is None or bs is None else 100 * (ms - bs)
    numbers["reach (× training length)"] = cl["ratio"] or 0.0
    return {"word": word_of(facts[spec["method"]]["gate"], cl), "numbers": numbers, "ind": ind, "ood": ood,
            "facts": facts, "claims": cl}


def _p(x):
    return None if x is None else 100 * x


def claims_text(f, spec):
    """The claims in words; when the method fails the gate, that comes first."""
    ind, facts, cl, method = f["ind"], f["facts"], f["claims"], spec["method"]
    gate = ""
    if not facts[method]["gate"]:
        m = facts[method]
        seeds = ", ".join(c.pct(x) for x in m["per"][ind]["seeds"])
        gate = (f"{method}'s exact match (%) at {ind} digits is {c.mean_std(m['cell'])} (seeds: {seeds}), below the "
                f"gate's {c.pct(m['thr'])}%; shown, not judged: ")
    reach = ("below the bar already at the first length beyond training" if cl["reach"] is None else
             f"holds up to {cl['reach']} digits, {cl['ratio']:.2f}x the training length, {cl['frac']:.2f} of the "
             f"paper's {spec['paper_ratio']:.2f}x (A " + ("holds: ≥ " if cl["a"] == 1 else "counts half: < ")
             + f"{REACH_FULL:g} of the paper's reach)")
    vals = ", ".join(f"{L}: {c.pct(v)}" for L, v in cl["value"].items())
    parts = [f"{gate}{method}'s exact match ({spec['agg']} over seeds; % at {vals}) ≥ {100 * spec['bar']:.0f}% {reach}"]
    for b, ok in cl["sep"].items():
        parts.append(f"above {b} beyond the seed spread (each seed's exact match averaged over the lengths beyond "
                     f"training): {'yes' if ok else 'no (tie)'}")
    for b in cl["failed"]:
        parts.append(f"{b} fails the competence gate (not comparable: the model did not learn the task)")
    return "; ".join(parts)


def baselines_text(facts, method, ood):
    """Each baseline's median exact match (%) per length beyond training, marked when it fails the gate."""
    return "; ".join(f"{b}: median " + ", ".join(f"{c.pct(facts[b]['per'][L]['median'])} at {L}" for L in ood)
                     + ("" if facts[b]["gate"] else " (fails the competence gate: not compared)")
                     for b in facts if b != method)


def table_text(f, label):
    """Exact match (%) per group and length: mean ± sample std (seeds), and the median over seeds."""
    body = []
    for g, x in f["facts"].items():
        row = [g, c.mean_std(x["cell"]) + ("" if x["gate"] else " ✗"), c.pct(x["thr"])]
        for L in f["ood"]:
            p = x["per"][L]
            m, sd, n = p["stats"]
            row.append("n/a" if m is None else f"{100 * m:.1f}" + ("" if sd is None else f" ± {100 * sd:.1f}")
                       + f" ({n}); median {100 * p['median']:.1f}")
        body.append(row)
    return (f"Exact match (%) at the largest training length {f['ind']} (✗ = fails the competence gate, whose threshold "
            f"is the next column) and beyond it: mean ± sample std (seeds), and the median over seeds:\n\n"
            + c.md_table([label, f"{f['ind']} (in dist.)", "gate: needs ≥"] + [str(L) for L in f["ood"]], body))


GATE = ("every group: {gate}; metric exact match (every answer digit and <EOS> right, greedy decoding) at "
        "{ind} digits. The method failing it makes the verdict not comparable; a baseline failing it is shown "
        "but not compared.")


def checks(ctx, f, spec, what):
    extra = (f"Claim A: {what} ≥ {100 * spec['bar']:.0f}% exact match from the first length beyond training up to a "
             f"reach, reported as a multiple of the training length and as a fraction of the paper's "
             f"{spec['paper_ratio']:.2f}x; it holds at ≥ {REACH_FULL:g} of the paper's reach and counts half below. "
             "Claim B: each seed's exact match averaged over the lengths beyond training, the method separated above "
             "every baseline that passes the gate. Reproduces: A holds and B; partly: B with A half or not met, or A "
             "when no baseline passes the gate; does not reproduce: a comparable baseline that the method does not "
             "beat beyond the seed spread (the papers' claim is that the baselines fail), or nothing.")
    return c.checks_text(GATE.format(gate=c.GATE_ACC_TEXT, ind=f["ind"]),
                         c.TIE_TEXT + " (score: a seed's exact match, from results.csv). " + extra,
                         c.budget_policy(ctx["config"], ctx["quick"]))
