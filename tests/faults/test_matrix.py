"""The fault matrix: every scenario on every column it applies to, the invariants after each.

One test per cell; a cell fails with the invariants it broke. Results (recovery time, faults
injected, invariants checked) go to tests/output/fault-matrix.json for docs/reliability.md.
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
#: libvirt last: its fixture may wait for another session's machine-wide libvirt test lock
ORDER = ("local", "gcp", "kubernetes", "controller", "libvirt")
CELLS = [pytest.param(s, c, id=s.id(c)) for c in ORDER for s in ALL if c in s.columns]


@pytest.mark.parametrize(("scenario", "column"), CELLS)
def test_cell(scenario, column, target_of, record, toxiproxy):
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
