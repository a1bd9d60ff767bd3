"""One scenario's result on one target, and the results file the matrix session writes
(tests/output/fault-matrix.json, rendered into docs/reliability.md by hack/fault_matrix_table.py)."""

from __future__ import annotations

import dataclasses
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "tests", "output", "fault-matrix.json")


@dataclasses.dataclass
class Outcome:
    scenario: str
    column: str
    description: str = ""
    recovery_seconds: float | None = None  # fault healed -> everything answers again
    faults: int = 0  # faults injected
    invariants: int = 0  # invariant checks made
    violations: list = dataclasses.field(default_factory=list)
    calls: list = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.violations

    def check(self, found: list) -> None:
        """Count one invariant check and keep what it found."""
        self.invariants += 1
        self.violations.extend(found)

    def as_dict(self) -> dict:
        return dict(dataclasses.asdict(self), passed=self.passed)


def worker_path(worker: str) -> str:
    """Where one pytest-xdist worker keeps its cells until the session merges them."""
    return RESULTS[: -len(".json")] + ".%s.json" % worker


def write(outcomes: list, seconds: float, path: str = RESULTS) -> None:
    _write_dicts([o.as_dict() for o in outcomes], seconds, path)


def merge_workers(workers: list, seconds: float, path: str = RESULTS) -> int:
    """The workers' files folded into ``path`` (cells in worker order) and removed; returns
    how many cells were merged. A worker that never wrote (no cell) adds nothing."""
    cells = []
    for worker in workers:
        part = worker_path(worker)
        try:
            with open(part, encoding="utf-8") as handle:
                cells += json.load(handle)["outcomes"]
        except FileNotFoundError:
            continue
        os.remove(part)
    if cells:
        _write_dicts(cells, seconds, path)
    return len(cells)


def _write_dicts(cells: list, seconds: float, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = {"seconds": round(seconds, 1), "outcomes": cells}
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)
