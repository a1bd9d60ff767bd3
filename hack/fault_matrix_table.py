"""Render the fault matrix's results file into the table of docs/reliability.md.

The matrix session (tests/faults, `make faults`) writes tests/output/fault-matrix.json; this
replaces the text between the two TABLE markers of docs/reliability.md with one row per
scenario, one column per provider, each cell pass/FAIL with the measured recovery time, and the
totals. `--check` only says whether the document is current.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "tests", "output", "fault-matrix.json")
DOC = os.path.join(ROOT, "docs", "reliability.md")
BEGIN, END = "<!-- TABLE BEGIN (hack/fault_matrix_table.py) -->", "<!-- TABLE END -->"
COLUMNS = ("local", "kubernetes", "gcp", "libvirt", "controller")


def cell(outcome: dict | None) -> str:
    if outcome is None:
        return "—"
    seconds = outcome.get("recovery_seconds")
    timing = "" if seconds is None else " %.2f s" % seconds
    return ("pass" if outcome["passed"] else "**FAIL**") + timing


def render(data: dict) -> str:
    outcomes = data["outcomes"]
    by_cell = {(o["scenario"], o["column"]): o for o in outcomes}
    scenarios = []
    for o in outcomes:
        if o["scenario"] not in [s for s, _d in scenarios]:
            scenarios.append((o["scenario"], o["description"]))
    columns = [c for c in COLUMNS if any(o["column"] == c for o in outcomes)]
    lines = [
        "| scenario | fault | %s |" % " | ".join(columns),
        "|---|---|%s|" % "|".join("---" for _c in columns),
    ]
    for name, description in scenarios:
        cells = [cell(by_cell.get((name, c))) for c in columns]
        lines.append("| `%s` | %s | %s |" % (name, description, " | ".join(cells)))
    failures = [o for o in outcomes if not o["passed"]]
    lines += [
        "",
        "Totals: %d scenarios, %d cells run, %d faults injected, %d invariant checks, %d failures;"
        " the session took %.0f s."
        % (
            len(scenarios),
            len(outcomes),
            sum(o["faults"] for o in outcomes),
            sum(o["invariants"] for o in outcomes),
            len(failures),
            data["seconds"],
        ),
    ]
    for o in failures:
        lines.append("- FAIL `%s` on %s: %s" % (o["scenario"], o["column"], "; ".join(o["violations"])[:400]))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--check", action="store_true", help="fail when docs/reliability.md is not current")
    args = parser.parse_args()
    with open(args.results, encoding="utf-8") as handle:
        table = render(json.load(handle))
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    head, _sep, rest = text.partition(BEGIN)
    _old, _sep, tail = rest.partition(END)
    new = "%s%s\n%s\n%s%s" % (head, BEGIN, table, END, tail)
    if args.check:
        return 0 if new == text else 1
    with open(DOC, "w", encoding="utf-8") as handle:
        handle.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
