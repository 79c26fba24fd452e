"""What every verdict rule shares: the competence gate, the verdict words, the provisional rule, the recipe
config's header and overrides, and the page's formatting. Standard library only (tomllib: Python 3.11+)."""
import re
import tomllib

# accuracy tasks: in distribution, close >= 80% of the gap from chance to 100%. The trainer's budget "competent" uses
# the same gate ([train] gate, default 0.8: training/train_config.hpp); tests/experiments/test_budget.cpp checks
# that the two defaults agree.
GATE_FRACTION = 0.8
MIN_SEEDS = 3        # fewer seeds than this: the verdict is provisional, never "does not reproduce"
REPRODUCES, PARTLY, NOT = "reproduces", "partly reproduces", "does not reproduce"
NOT_COMPARABLE = "is not comparable: the model did not learn the task"
EFFECT_WORDS = (REPRODUCES, PARTLY)  # the words that claim an effect: their null rate must stay <= 10%

GATE_ACC_TEXT = (f"in-distribution accuracy (the metric named in the table, mean over seeds, at the largest training size) "
                 f"≥ chance + {GATE_FRACTION:g} × (1 − chance), i.e. at least {100 * GATE_FRACTION:.0f}% of the way from "
                 "chance (the report's chance level for that size and metric) to 100%")
TIE_TEXT = ("an order between two groups holds only when their seed-level scores separate: mean − sample std of the "
            "higher > mean + sample std of the lower (over seeds; a group with one seed separates from nothing); "
            "otherwise the page writes a tie")


def gate_threshold(chance):
    """The accuracy a group must reach in distribution: chance + GATE_FRACTION * (1 - chance)."""
    c = chance or 0.0
    return c + GATE_FRACTION * (1 - c)


def gate_accuracy(c):
    """(passes, threshold) for a cell of an accuracy metric in distribution; a missing cell fails."""
    if c is None or c["mean"] is None:
        return False, None
    t = gate_threshold(c["chance"])
    return c["mean"] >= t, t


def verdict_word(held, total):
    """All claims hold -> reproduces, some (or partly) -> partly, none -> not (held may count halves)."""
    if held >= total:
        return REPRODUCES
    return PARTLY if held > 0 else NOT


def final_word(word, n_seeds):
    """Fewer than MIN_SEEDS seeds: provisional, and never "does not reproduce" (no seed spread to judge by)."""
    if n_seeds >= MIN_SEEDS:
        return word
    if word == NOT:
        return f"is provisional ({n_seeds} seed(s) per group: no effect shown, none ruled out)"
    return f"is provisional ({n_seeds} seed(s) per group; with {MIN_SEEDS} the rules would start from: {word})"


def pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}"


def mean_std(c):
    if c is None or c["mean"] is None:
        return "n/a"
    s = f"{100 * c['mean']:.1f}"
    if c["std"] is not None and c["n"] > 1:
        s += f" ± {100 * c['std']:.1f}"
    return s + f" ({c['n']})"


def md_table(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def checks_text(gate, ties, budget, rank=None):
    lines = [f"- **Competence gate** (checked before extrapolation is judged): {gate}", f"- **Ties**: {ties}"]
    if rank:
        lines.append(f"- **Rank rule**: {rank}")
    lines.append(f"- **Budget policy** (every table on this page): {budget}.")
    return "\n".join(lines)


def config_header(config):
    """The recipe config's leading comment block, without the '# ' and the reproduce.quick line."""
    out = []
    for line in open(config):
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        if not text.startswith(("reproduce.quick:", "reproduce.budget:", "reproduce.protocol:")):
            out.append(text)
    return "\n".join(out).strip()


def quick_overrides(config):
    return header_line(config, "quick")


def recipe_arms(config):
    """[(arm, overrides)] of the recipe's `# reproduce.arm: ARM [--set ...]` lines ([] for a one-sweep recipe)."""
    out = []
    for line in open(config):
        if line.startswith("# reproduce.arm:"):
            name, _, rest = line.split(":", 1)[1].strip().partition(" ")
            out.append((name, rest.strip()))
    return out


def load_config(config):
    with open(config, "rb") as f:
        return tomllib.load(f)


def budget_policy(config, quick):
    """One sentence: how long each run of the recipe trains, and which model its tables evaluate."""
    train = load_config(config).get("train", {})
    steps = train.get("steps")
    if quick:
        for m in re.finditer(r"train\.steps=(\d+)", quick_overrides(config)):
            steps = int(m.group(1))
    if train.get("budget") == "competent":
        return (f"until competent: each run stops at the first held-out evaluation (every {train.get('eval_every', '?')} "
                f"steps) where {train.get('early_stop_metric')} on the in-distribution validation split passes the "
                f"competence gate (chance + {train.get('gate', GATE_FRACTION):g} × (1 − chance)) and has plateaued (no "
                f"improvement > {train.get('plateau_eps', 0.01):g} over the last {train.get('plateau_evals', 3)} "
                f"evaluations), or at the cap of {steps} steps; the model of the last step is evaluated")
    if train.get("early_stop_target") is not None and train.get("budget") != "fixed":
        return (f"first fit: each run stops at the first held-out evaluation (every {train.get('eval_every', '?')} steps, at "
                f"the training length) where {train.get('early_stop_metric')} ≥ {train['early_stop_target']:g}, or at "
                f"{steps} steps if it never does; the model of the last step is evaluated (not the best one)")
    return f"fixed steps: every run trains {steps} steps; the model of the last step is evaluated (not the best one)"


def header_line(config, key):
    """The text of the recipe header's `# reproduce.KEY: ...` line ("" when absent)."""
    for line in open(config):
        if line.startswith(f"# reproduce.{key}:"):
            return line.split(":", 1)[1].strip()
    return ""
