"""python3 -m pelab.reproduce COMMAND (scripts/reproduce.sh runs it; python/ on PYTHONPATH):

  page NAME RUN_DIR --config C [--quick 0|1] --out PAGE [--results DIR]
      the page from a sweep directory (RUN_DIR/ARM per arm); with --results, also DIR/STEM.md, its plots,
      DIR/STEM.results.csv (the seed-level results), DIR/STEM.runs.csv (per run: steps used, validation value,
      held-out curve) and DIR/STEM.provenance.json (STEM: NAME or NAME.quick)
  rules NAME --config C [--quick 0|1] --results DIR
      the page again from DIR/STEM.results.csv, STEM.runs.csv and STEM.provenance.json: new rules, no training
  check-sweep NAME RUN_DIR --config C [--quick 0|1]
      exit 2 unless RUN_DIR (each RUN_DIR/ARM) is the recipe's sweep, with the variant's and arm's overrides
  nulls [--check DOC] [--draws N]
      the null-simulation table of docs/reproductions.md; --check: its rows at each recipe's seed count only, exit 1
      when a rule claims an effect more often than 10% under a null there, or when DOC lacks one of those rows
Exit 2 with a message on missing or malformed input."""
import argparse
import os
import sys

from . import common as c
from . import nulls, protocol, provenance
from .page import write_page
from .sweep import check_sweep, read_sweep
from .table import PageError, read_csv, write_csv

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def stem(name, quick):
    return name + (".quick" if quick else "")


def cmd_page(a):
    t = read_sweep(a.name, a.run_dir, a.config)
    arms = [x for x, _ in c.recipe_arms(a.config)]
    prov = provenance.collect(a.run_dir, arms, t.seed_ids())
    runs = protocol.read_runs(a.run_dir, t, arms)
    base = os.path.join(a.results, stem(a.name, a.quick)) if a.results else None
    verdict = write_page(a.name, t, a.config, a.quick, a.out, prov, a.run_dir, base and base + ".md", runs)
    if base:  # after the page: a page that fails replaces no committed file
        write_csv(t, base + ".results.csv")
        protocol.write_runs(runs, t.keys, base + ".runs.csv")
        provenance.save(prov, base + ".provenance.json")
    print(verdict)


def cmd_rules(a):
    base = os.path.join(a.results, stem(a.name, a.quick))
    t = read_csv(base + ".results.csv")
    prov = provenance.load(base + ".provenance.json") if os.path.isfile(base + ".provenance.json") else None
    runs = protocol.read_runs_csv(base + ".runs.csv", t.keys)
    print(write_page(a.name, t, a.config, a.quick, base + ".md", prov, runs=runs))


def cmd_check(a):
    quick = c.quick_overrides(a.config) if a.quick else ""
    arms = c.recipe_arms(a.config)
    for arm, sets in arms or [("", "")]:
        check_sweep(os.path.join(a.run_dir, arm), a.config, sets + " " + quick)


def cmd_nulls(a):
    """The table; with --check only the rows at each recipe's seed count, each of which must be in the document."""
    text, failures = nulls.table_markdown(os.path.join(ROOT, "experiments", "reproduce"),
                                          os.path.join(ROOT, "experiments", "results", "reproduce"), draws=a.draws,
                                          recipe_only=bool(a.check))
    print(text)
    if a.check:
        doc = open(a.check).read().splitlines()
        stale = [row for row in text.splitlines()[2:] if row not in doc]
        if stale:
            failures.append(f"{a.check}: {len(stale)} row(s) of its null-simulation table differ from the ones computed "
                            f"now (`python3 -m pelab.reproduce nulls` prints the table), e.g. {stale[0]}")
        for f in failures:
            print("FAIL:", f, file=sys.stderr)
        return 1 if failures else 0
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m pelab.reproduce", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("page", "rules", "check-sweep"):
        p = sub.add_parser(name)
        p.add_argument("name")
        if name != "rules":
            p.add_argument("run_dir")
        p.add_argument("--config", required=True)
        p.add_argument("--quick", type=int, default=0, choices=(0, 1))
        if name == "page":
            p.add_argument("--out", required=True)
        if name != "check-sweep":
            p.add_argument("--results", required=name == "rules")
    p = sub.add_parser("nulls")
    p.add_argument("--check")
    p.add_argument("--draws", type=int, default=nulls.DRAWS)
    a = ap.parse_args(argv)
    try:
        return {"page": cmd_page, "rules": cmd_rules, "check-sweep": cmd_check, "nulls": cmd_nulls}[a.cmd](a) or 0
    except (PageError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
