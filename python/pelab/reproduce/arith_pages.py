"""The pages of the three arithmetic recipes (cho2024, mcleish2024, zhou2024) over arithmetic.py's rules."""
from . import arithmetic as a
from . import common as c

CHO = {"key": "arm", "method": "coupled", "bar": 0.95, "agg": "median", "paper_ratio": 200 / 30}
MCLEISH = {"key": "encoding.name", "method": "abacus", "bar": 0.99, "agg": "best", "paper_ratio": 100 / 20}
ZHOU = {"key": "arm", "method": "fire_randomized", "bar": 0.98, "agg": "best", "paper_ratio": 100 / 40}
ZHOU_SPREAD = 0.20  # "not robust": at some length beyond training the seeds' exact match spans >= 20 points


def render_cho2024(t, ctx, f):
    """Position coupling against the same model on plain ids: median over seeds, as Cho et al.'s Figure 1."""
    ind, ood, cl = f["ind"], f["ood"], f["claims"]
    verdict = (f"Cho et al.'s position-coupling claim {ctx['word']} at toy scale (trained on 1..{ind} digits, tested up "
               f"to {max(ood)}; the paper: 1..30 digits, ≥ 95% up to 200, 6.67x): " + a.claims_text(f, CHO) + ".")
    reach = (f"not reached (median {c.pct(cl['value'][ood[0]])}% at {ood[0]} digits)" if cl["reach"] is None
             else f"{cl['reach']} digits ({cl['ratio']:.2f}x, {cl['frac']:.2f} of the paper's reach)")
    comparison = c.md_table(["", "Cho et al. 2024 (Figure 1; medians over runs)", "pelab (median over seeds)"],
                            [["trained on", "1..30 digits", f"1..{ind} digits"],
                             ["coupling: ≥ 95% exact match up to", "200 digits (6.67x)", reach],
                             ["without coupling (paper: Figure 1's baselines, NoPE among them; pelab: the same table on "
                              "ids 0..T-1)", "fail beyond the training lengths", a.baselines_text(f["facts"], "coupled", ood)]])
    return verdict, comparison, a.table_text(f, "arm"), a.checks(ctx, f, CHO, "the coupled arm's median over seeds")


def render_mcleish2024(t, ctx, f):
    """Abacus against the same model without it (NoPE attention in both); the paper's headline is its best model."""
    ind, ood, cl = f["ind"], f["ood"], f["claims"]
    med = ", ".join(f"{L}: {c.pct(f['facts']['abacus']['per'][L]['median'])}" for L in ood)
    verdict = (f"McLeish et al.'s Abacus claim {ctx['word']} at toy scale (trained on 1..{ind} digits, tested up to "
               f"{max(ood)}; the paper: 20 digits, up to 99% at 100, 5x): " + a.claims_text(f, MCLEISH)
               + f"; abacus median over seeds {med}.")
    comparison = c.md_table(["", "McLeish et al. 2024 (abstract, Figure 1)", "pelab"],
                            [["trained on", "operands of up to 20 digits", f"operands of 1..{ind} digits"],
                             ["Abacus: exact match beyond training", "up to 99% on 100-digit addition (5x; their best model)",
                              "best seed " + ", ".join(f"{L}: {c.pct(cl['value'][L])}" for L in ood)],
                             ["without Abacus (pelab: the same model, NoPE)", "lower beyond the training length (Figure 1, "
                              "left: earlier state-of-the-art embeddings)", a.baselines_text(f["facts"], "abacus", ood)]])
    return verdict, comparison, a.table_text(f, "encoding"), a.checks(ctx, f, MCLEISH, "the best Abacus seed")


def zhou_spread(f):
    p = f["facts"][ZHOU["method"]]["per"]
    return {L: None if p[L]["best"] is None else p[L]["best"] - p[L]["worst"] for L in [f["ind"]] + f["ood"]}


def render_zhou2024(t, ctx, f):
    """FIRE + randomized positions + reversed output + index hints against RoPE: the best seed (their Figure 1 is
    their best run), and the spread over seeds (their claim: not robust to the seed), reported beside the word."""
    ind, ood, cl, method = f["ind"], f["ood"], f["claims"], ZHOU["method"]
    spread = zhou_spread(f)
    wide = [L for L in ood if spread[L] is not None and spread[L] >= ZHOU_SPREAD]
    robust = ("not comparable" if not f["facts"][method]["gate"] else
              f"seeds span ≥ {100 * ZHOU_SPREAD:.0f} points at {', '.join(map(str, wide))} digits (not robust, as the paper)"
              if wide else f"seeds span < {100 * ZHOU_SPREAD:.0f} points at every length beyond training")
    verdict = (f"Zhou et al.'s claim {ctx['word']} at toy scale (trained on 1..{ind} digits, tested up to {max(ood)}; the "
               f"paper: 40 digits, > 98% at 100 with its best run, 2.5x): " + a.claims_text(f, ZHOU)
               + f". Robustness: {robust}.")
    fmt = lambda L: "n/a" if spread.get(L) is None else f"{100 * spread[L]:.1f} points"
    comparison = c.md_table(["", "Zhou et al. 2024 (Figure 1; abstract)", "pelab"],
                            [["trained on", "1..40 digits", f"1..{ind} digits"],
                             ["FIRE + randomized + reversed + index hints, best run", "> 98% exact match at 100 digits (2.5x)",
                              ", ".join(f"{L}: {c.pct(cl['value'][L])}" for L in ood)],
                             ["the same format with RoPE", "fails beyond the training length",
                              a.baselines_text(f["facts"], method, ood)],
                             ["spread over seeds", "large variance across weight-initialization and data-order seeds",
                              f"best − worst seed: {fmt(ind)} at {ind} (in dist.); " + ", ".join(f"{L}: {fmt(L)}" for L in ood)]])
    return verdict, comparison, a.table_text(f, "arm"), a.checks(ctx, f, ZHOU, "the method's best seed")
