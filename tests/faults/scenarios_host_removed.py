"""A libvirt host dropped from the providers entry (a typo in its name) between runs.

The reference's Delete treats an id on an unconfigured host as done, which leaks the host's
domains, unseen by GC. Here a delete by id against the entry with the typo must fail Permanent
with reason HostNotConfigured and leave every domain on libvirtd (counted there), and with the
entry fixed the same delete must remove them all.
"""

from __future__ import annotations

import copy
import os
import time
import uuid

from faults import invariants, playbook_runs
from faults.results import Outcome
from faults.scenario import Scenario, no_fault

REASON = "HostNotConfigured"


def _entry_with_typo(entry: dict, type_name: str) -> dict:
    """The entry with its only host renamed and pointed at a closed port: nothing is reachable."""
    broken = copy.deepcopy(entry)
    block = broken[type_name]
    block["hosts"] = [dict(block["hosts"][0], name="hv-typo", address="127.0.0.1:1")]
    return broken


def _absent_by_id(target, entry: dict, ids: list) -> list:
    play = playbook_runs.batch_play(target, [], "", "absent")
    task = play[0]["tasks"][0][playbook_runs.PI]
    task["providers"] = [entry]
    task["instances"] = [{"id": provider_id} for provider_id in ids]
    return play


def host_removed(target, scenario) -> Outcome:
    outcome = Outcome(scenario.name, target.column, scenario.description, faults=1)
    run_dir = os.path.join(target.backend_dir(), "host-removed-" + uuid.uuid4().hex[:8])
    uids = ["hr%d-%s" % (i, uuid.uuid4().hex) for i in range(2)]
    created = playbook_runs.PlaybookRun(run_dir, playbook_runs.batch_play(target, uids, ""), "present")
    rc = created.wait(300)
    ids = [r["id"] for r in created.results() if r.get("id")]
    outcome.check([] if rc == 0 and len(ids) == 2 else ["the create failed: %s" % created.output()[-800:]])
    entry = target.providers_entry()
    typo = _entry_with_typo(entry, target.backend.type_name)
    removed = playbook_runs.PlaybookRun(run_dir, _absent_by_id(target, typo, ids), "absent-typo")
    removed.wait(120)
    answers = removed.results()
    reasons = [a.get("reason") for a in answers]
    typo_rc = removed.process.returncode
    refused = typo_rc != 0 and reasons == [REASON] * len(ids)
    outcome.check(
        []
        if refused
        else ["a delete on the dropped host did not fail %s: rc %s, %s" % (REASON, typo_rc, answers)]
    )
    named = "hv-typo" in removed.output()
    outcome.check([] if named else ["the failure does not name the host: %s" % removed.output()[-800:]])
    outcome.check(invariants.one_instance_per_live_uid(target, uids, [], seconds=0))
    fixed_at = time.monotonic()
    fixed = playbook_runs.PlaybookRun(run_dir, _absent_by_id(target, entry, ids), "absent-fixed")
    rc = fixed.wait(300)
    outcome.recovery_seconds = round(time.monotonic() - fixed_at, 2)
    outcome.check([] if rc == 0 else ["the delete with the host back failed: %s" % fixed.output()[-800:]])
    outcome.check(invariants.one_instance_per_live_uid(target, [], uids))
    outcome.check(invariants.nothing_left(target, ids))
    outcome.calls = ["typo run rc=%d reasons=%s" % (typo_rc, reasons), "fixed run rc=%d" % rc]
    return outcome


SCENARIOS = [
    Scenario(
        "ops-host-removed",
        "the instances' libvirt host dropped from the providers entry (a typo) for a delete, then put back",
        ("libvirt",),
        no_fault,
        host_removed,
    ),
]
