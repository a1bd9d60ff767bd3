"""Render the fault matrix's results file into the table of docs/reliability.md.

The matrix session (tests/faults, `make faults`) writes tests/output/fault-matrix.json; this
replaces the text between the two TABLE markers of docs/reliability.md with one row per
scenario, one column per provider, each cell pass/FAIL with the measured recovery time, and the
totals. `--check` only says whether the document is current.

`--merge RUN.json` first folds a run of a few cells (`pytest tests/faults -k ...`) into the
results file: its cells replace the same cells there and new ones are added after them, and the
totals then name both sessions' durations. The results file is rewritten with the merge, so a
later `--check` reads what the document was rendered from.
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


def merge(base: dict, run: dict) -> dict:
    """``base`` with ``run``'s cells replacing (or added after) its own."""
    fresh = {(o["scenario"], o["column"]): o for o in run["outcomes"]}
    outcomes = [fresh.pop((o["scenario"], o["column"]), o) for o in base["outcomes"]]
    outcomes += [o for o in run["outcomes"] if (o["scenario"], o["column"]) in fresh]
    sessions = base.get("sessions") or [base["seconds"]]
    return {
        "seconds": round(sum(sessions) + run["seconds"], 1),
        "sessions": [*sessions, run["seconds"]],
        "outcomes": outcomes,
    }


def _took(data: dict) -> str:
    sessions = data.get("sessions")
    if not sessions:
        return "the session took %.0f s" % data["seconds"]
    return "merged from %d sessions, which took %s" % (
        len(sessions),
        " and ".join("%.0f s" % s for s in sessions),
    )


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
        " %s."
        % (
            len(scenarios),
            len(outcomes),
            sum(o["faults"] for o in outcomes),
            sum(o["invariants"] for o in outcomes),
            len(failures),
            _took(data),
        ),
    ]
    for o in failures:
        lines.append("- FAIL `%s` on %s: %s" % (o["scenario"], o["column"], "; ".join(o["violations"])[:400]))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--check", action="store_true", help="fail when docs/reliability.md is not current")
    parser.add_argument("--merge", help="a results file of a few cells to fold into --results first")
    args = parser.parse_args()
    with open(args.results, encoding="utf-8") as handle:
        data = json.load(handle)
    if args.merge and not args.check:
        with open(args.merge, encoding="utf-8") as handle:
            data = merge(data, json.load(handle))
        with open(args.results + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        os.replace(args.results + ".tmp", args.results)
    table = render(data)
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
