"""The recipe pages' tie rule (pelab.reproduce.stats: separated, tie_ranks) on the cases the report's C++ port
(experiments/report/report_headline.cpp) is held to as well: tests/scripts/tie_rule_cases.json. Standard library
only, like pelab.reproduce; run by ctest (scripts.tie_rule_shared_cases)."""
import json
import os
import sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "python"))
from pelab.reproduce.stats import separated, tie_ranks  # noqa: E402

cases = json.load(open(os.path.join(root, "tests", "scripts", "tie_rule_cases.json")))["cases"]
bad = []
for c in cases:
    stats = {i: tuple(s) for i, s in enumerate(c["stats"])}
    groups = tie_ranks(stats)[1]
    sep = separated(stats[0], stats[1])
    if groups != c["groups"] or sep != c["separated_first_pair"]:
        bad.append(f"{c['name']}: groups {groups} (file: {c['groups']}), separated {sep} (file: {c['separated_first_pair']})")
print("\n".join(bad) if bad else f"PASS: {len(cases)} shared tie-rule cases")
sys.exit(1 if bad else 0)
