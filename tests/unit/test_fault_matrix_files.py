"""The fault matrix split over files (one per column, the controller's in three, for
``--dist loadfile``) loses no cell and runs none twice."""

from __future__ import annotations

import collections
import importlib
import pathlib

from faults import matrix

FILES = sorted(p.stem for p in (pathlib.Path(matrix.__file__).parent).glob("test_matrix_*.py"))


def _ids(params) -> list:
    return [p.id for p in params]


def test_every_cell_is_in_exactly_one_file():
    in_files = collections.Counter()
    for name in FILES:
        module = importlib.import_module("faults." + name)
        marks = [m for m in module.test_cell.pytestmark if m.name == "parametrize"]
        in_files.update(_ids(marks[0].args[1]))
    every = [cell for column in matrix.COLUMNS for cell in _ids(matrix.cells(column))]

    assert len(every) >= 100
    assert sorted(in_files) == sorted(every)
    assert [cell for cell, n in in_files.items() if n > 1] == []


def test_the_controller_parts_hold_every_controller_scenario_once():
    parts = [
        s for scenarios in matrix.CONTROLLER_PARTS.values() for s in scenarios if "controller" in s.columns
    ]
    every = [s for s in matrix.ALL if "controller" in s.columns]
    assert sorted(s.name for s in parts) == sorted(s.name for s in every)
    assert len(parts) == len(every)
