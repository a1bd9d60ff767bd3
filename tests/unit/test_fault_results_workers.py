"""The fault matrix under pytest-xdist: each worker keeps its cells in a file of its own (two
workers writing the one results file would each overwrite the other's cells), and the session
folds them into the results file the table is rendered from."""

from __future__ import annotations

import json

from faults import results
from faults.results import Outcome


def test_the_workers_cells_are_merged_into_one_results_file(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS", str(tmp_path / "fault-matrix.json"))
    results.write([Outcome("net-down", "gcp", faults=1)], 10.0, results.worker_path("gw0"))
    results.write(
        [Outcome("api-restart", "kubernetes"), Outcome("leader", "controller", violations=["two leaders"])],
        20.0,
        results.worker_path("gw1"),
    )

    merged = results.merge_workers(["gw0", "gw1", "gw2"], 25.0, results.RESULTS)

    data = json.loads((tmp_path / "fault-matrix.json").read_text())
    assert merged == 3
    assert data["seconds"] == 25.0
    assert [(o["scenario"], o["column"], o["passed"]) for o in data["outcomes"]] == [
        ("net-down", "gcp", True),
        ("api-restart", "kubernetes", True),
        ("leader", "controller", False),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fault-matrix.json"]  # parts removed


def test_workers_that_ran_no_cell_leave_the_results_file_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS", str(tmp_path / "fault-matrix.json"))
    results.write([Outcome("net-down", "gcp")], 5.0, results.RESULTS)

    assert results.merge_workers(["gw0"], 1.0, results.RESULTS) == 0
    assert json.loads((tmp_path / "fault-matrix.json").read_text())["seconds"] == 5.0
