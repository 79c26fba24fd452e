"""Reproduction verdicts (docs/reproductions.md): the rules that turn a recipe's seed-level results into a page
and a verdict word, their null simulations, the stability of each word over the seeds, and the n-gram baselines.
Standard library only: it imports without the compiled module `_pelab` and without pandas, so a sanitized build
writes pages too. `python3 -m pelab.reproduce --help` (with python/ on PYTHONPATH) is what scripts/reproduce.sh runs."""
