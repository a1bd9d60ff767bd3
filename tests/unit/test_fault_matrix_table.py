"""hack/fault_matrix_table.py: the results file becomes one row per scenario, one column per
provider that ran, and totals that add up (a failure is shown, never dropped)."""

from __future__ import annotations

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location(
    "fault_matrix_table", os.path.join(ROOT, "hack", "fault_matrix_table.py")
)
table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(table)


def outcome(scenario, column, passed=True, seconds=0.5):
    return {
        "scenario": scenario,
        "column": column,
        "description": "the %s fault" % scenario,
        "recovery_seconds": seconds,
        "faults": 2,
        "invariants": 6,
        "violations": [] if passed else ["uid u has 2 instances on the backend, want 1"],
        "passed": passed,
    }


def test_rows_columns_cells_and_totals():
    data = {
        "seconds": 12.3,
        "outcomes": [
            outcome("net-down", "gcp"),
            outcome("net-down", "libvirt", False, 3.25),
            outcome("lock", "local"),
        ],
    }
    text = table.render(data)
    lines = text.splitlines()
    assert lines[0] == "| scenario | fault | local | gcp | libvirt |"
    assert "| `net-down` | the net-down fault | — | pass 0.50 s | **FAIL** 3.25 s |" in lines
    assert "| `lock` | the lock fault | pass 0.50 s | — | — |" in lines
    assert "Totals: 2 scenarios, 3 cells run, 6 faults injected, 18 invariant checks, 1 failures" in text
    assert "- FAIL `net-down` on libvirt: uid u has 2 instances" in text


def test_a_run_of_a_few_cells_merges_into_the_full_run():
    full = {"seconds": 100.0, "outcomes": [outcome("net-down", "gcp", False), outcome("lock", "local")]}
    few = {"seconds": 7.0, "outcomes": [outcome("net-down", "gcp", True, 0.25), outcome("new", "controller")]}
    merged = table.merge(full, few)
    assert [(o["scenario"], o["column"], o["passed"]) for o in merged["outcomes"]] == [
        ("net-down", "gcp", True),
        ("lock", "local", True),
        ("new", "controller", True),
    ]
    text = table.render(table.merge(merged, {"seconds": 3.0, "outcomes": [outcome("lock", "local")]}))
    assert "3 cells run" in text and "0 failures" in text
    assert "merged from 3 sessions, which took 100 s and 7 s and 3 s" in text
