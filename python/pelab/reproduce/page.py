"""A recipe's result page: the verdict (with its stability and the seeds' provenance), the recipe's header, what the
verdict checks, the paper's numbers beside pelab's, and the tables; from a Table, however it was read."""
import os
import shutil

from . import common as c
from . import protocol, protocol_page, provenance, robust
from .recipes import RECIPES, context
from .table import PageError

PLOTS = ("loss_by_position.png", "length_generalization.png")
PLOTS_HERE = "\x00plots\x00"


def verdict_of(name, t, ctx):
    """The rule's facts, the bootstrap over the seeds and the word the page prints."""
    judge = RECIPES[name]["judge"]
    f = judge(t, ctx)
    b = robust.bootstrap(t, judge, ctx, f["word"])
    n = t.fewest_seeds()
    word = c.final_word(f["word"], n) if n < c.MIN_SEEDS else robust.stable_word(f["word"], b)
    return f, b, word


def plot_links(name, run_dir, config, copy):
    """Markdown links to the report's main plot of each arm; copies them beside `copy` (None: links into run_dir)."""
    if "note" in RECIPES[name] or run_dir is None:
        return RECIPES[name].get("note", "") + ("\n\n" if "note" in RECIPES[name] else "")
    links = ""
    for sub in [a for a, _ in c.recipe_arms(config)] or [""]:
        plot = next((p for p in PLOTS if os.path.isfile(os.path.join(run_dir, sub, "plots", p))), None)
        if plot is None:
            continue
        caption = f"{sub}: {plot}" if sub else plot
        if copy is None:
            links += f"![{caption}]({os.path.join(sub, 'plots', plot)})\n\n"
        else:
            png = os.path.splitext(os.path.basename(copy))[0] + (f".{sub}" if sub else "") + "." + plot
            shutil.copyfile(os.path.join(run_dir, sub, "plots", plot), os.path.join(os.path.dirname(copy) or ".", png))
            links += f"![{caption}]({png})\n\n"
    return links


def page_text(name, t, config, quick, prov, plots, stem, runs=None):
    """The page's markdown (runs: protocol.read_runs' records, None when the results predate them)."""
    ctx = context(name, config, quick)
    full, chosen = t, protocol.selected_keys(config)
    if chosen:  # the rules judge each group's selected value only ([protocol] select)
        if runs is None:
            raise PageError(f"{config} has [protocol] select, but the runs' validation values are missing (each run's "
                            f"validation.json, kept as {stem}.runs.csv beside the page)")
        t = protocol.apply(t, runs, chosen)
    f, b, ctx["word"] = verdict_of(name, t, ctx)
    verdict, comparison, tables, checks = RECIPES[name]["render"](t, ctx, f)
    variant = (f"**quick variant** (`--quick`: {c.quick_overrides(config) or 'no overrides'}): fewer seeds and/or steps "
               "than the recipe's full setting") if quick else "full setting"
    rel = os.path.relpath(config, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    text = f"""# Reproduction: {RECIPES[name]['title']}

**Verdict:** {verdict}

{robust.text(b, f['numbers'])}

Recipe `{rel}`, {variant}; `scripts/reproduce.sh {name}{' --quick' if quick else ''}`.

{provenance.text(prov)}

## Protocol and budget

{protocol_page.section(full, runs, config, quick)}

## The paper and this recipe (from the config's header)

```
{c.config_header(config)}
```

## What the verdict checks first

{checks}
- **Null rate**: how often this rule says "reproduces" or "partly reproduces" on results with no effect, and the
  stability above, are in docs/reproductions.md ("Null simulations").

## The claim, the paper's numbers and pelab's

{comparison}

## pelab's numbers

{tables}

{plots}All numbers come from `experiments/results/reproduce/{stem}.results.csv` (the seed-level results; `scripts/reproduce.sh
{name}{' --quick' if quick else ''} --rules-only` regenerates the page from it). The rules are in
`python/pelab/reproduce/` (module `{RECIPES[name].get('module', RECIPES[name]['judge'].__module__.rsplit('.', 1)[-1])}`).
"""
    return text, verdict


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def write_page(name, t, config, quick, out, prov=None, run_dir=None, copy=None, runs=None):
    """Writes the page to `out` (and to `copy`, with the plots beside it); returns the verdict sentence."""
    if name not in RECIPES:
        raise PageError(f"unknown recipe '{name}'; known: {', '.join(RECIPES)}")
    stem = name + (".quick" if quick else "")  # the committed results' name, wherever this page goes
    text, verdict = page_text(name, t, config, quick, prov, PLOTS_HERE, stem, runs)
    write_atomic(out, text.replace(PLOTS_HERE, plot_links(name, run_dir, config, None)))
    if copy:
        write_atomic(copy, text.replace(PLOTS_HERE, plot_links(name, run_dir, config, copy)))
    return verdict
