"""The fault matrix: every scenario on every column it applies to, the invariants after each.

One test per cell; a cell fails with the invariants it broke. Results (recovery time, faults
injected, invariants checked) go to tests/output/fault-matrix.json for docs/reliability.md.

The cells are split over the ``test_matrix_*.py`` files, one per column and the controller's
column in three, because ``make faults`` runs them with pytest-xdist ``--dist loadfile``: a
file is one worker's whole (its session target set up once, its cells in their order). Files,
not ``xdist_group`` marks: with pytest 9.2 the marks no longer group (pytest-xdist #1386).
``tests/unit/test_fault_matrix_files.py`` proves every cell is in exactly one file.
"""

from __future__ import annotations

import pytest

from faults import provider_round
from faults.results import Outcome
from faults.scenarios_answers import SCENARIOS as ANSWERS
from faults.scenarios_controller import SCENARIOS as CONTROLLER
from faults.scenarios_controller_credentials import SCENARIOS as CONTROLLER_CREDENTIALS
from faults.scenarios_controller_leader import SCENARIOS as CONTROLLER_LEADER
from faults.scenarios_controller_link import SCENARIOS as CONTROLLER_LINK
from faults.scenarios_controller_ops import SCENARIOS as CONTROLLER_OPS
from faults.scenarios_crashes import SCENARIOS as CRASHES
from faults.scenarios_health_link import SCENARIOS as HEALTH_LINK
from faults.scenarios_host_removed import SCENARIOS as HOST_REMOVED
from faults.scenarios_local import SCENARIOS as LOCAL
from faults.scenarios_network import SCENARIOS as NETWORK
from faults.scenarios_operations import SCENARIOS as OPERATIONS
from faults.scenarios_restarts import SCENARIOS as RESTARTS

#: the controller's own cells first (they stop it), then those that keep one running between them
ALL = (
    NETWORK
    + ANSWERS
    + LOCAL
    + CRASHES
    + OPERATIONS
    + HOST_REMOVED
    + RESTARTS
    + CONTROLLER
    + CONTROLLER_LINK
    + HEALTH_LINK
    + CONTROLLER_OPS
    + CONTROLLER_CREDENTIALS
    + CONTROLLER_LEADER
)
COLUMNS = ("local", "gcp", "kubernetes", "controller", "libvirt")
#: the controller column's three files, each in the matrix's order; which worker runs which
#: part, and in what order, is not fixed (every part sets up its own controller target)
CONTROLLER_PARTS = {
    "controller": CONTROLLER + CONTROLLER_LEADER,
    "controller_link": CONTROLLER_LINK + HEALTH_LINK,
    "controller_ops": CONTROLLER_OPS + CONTROLLER_CREDENTIALS,
}


def cells(column: str, scenarios: list = ALL) -> list:
    """The cells of ``column`` among ``scenarios``, in the matrix's order, as pytest params."""
    return [pytest.param(s, column, id=s.id(column)) for s in scenarios if column in s.columns]


def run_cell(scenario, column, target_of, record, toxiproxy) -> None:
    """One cell: the scenario on the column's target, its outcome recorded, failed on a broken
    invariant."""
    target = target_of(column)
    try:
        if scenario.flow == "round":
            outcome = provider_round.run(target, scenario, lambda: {"toxiproxy log": toxiproxy.log_text()})
        else:
            outcome = scenario.flow(target, scenario)
    except Exception as exc:  # a cell that errors is a failed cell in the table, never a missing one
        record(Outcome(scenario.name, column, scenario.description, violations=["error: %r" % exc]))
        raise
    record(outcome)
    assert outcome.passed, "%s on %s broke invariants: %s (calls: %s)" % (
        scenario.name,
        column,
        outcome.violations,
        outcome.calls,
    )


def cell_test(cell_params: list):
    """The ``test_cell`` of one ``test_matrix_*.py`` file, over ``cell_params``."""

    @pytest.mark.parametrize(("scenario", "column"), cell_params)
    def test_cell(scenario, column, target_of, record, toxiproxy):
        run_cell(scenario, column, target_of, record, toxiproxy)

    return test_cell
