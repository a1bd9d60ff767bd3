"""A libvirt host dropped from the providers entry (a typo in its name) between runs.

A delete by id against the entry with the typo is done without reaching anything (the blueprint's
SHOULD, issue 14: deletion of its Proxy must be able to finish), and says so: every item answers
``absent`` with reason HostNotConfigured and a warning names the host. Nothing on libvirtd is
touched (counted there). With the entry fixed, a GC sweep collects every such domain, since its
owner is gone: nothing is leaked, nothing not ours is touched.
"""

from __future__ import annotations

import copy
import os
import time
import uuid

from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import gc
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
    released = typo_rc == 0 and [(a.get("state"), a.get("reason")) for a in answers] == [
        ("absent", REASON)
    ] * len(ids)
    outcome.check(
        []
        if released
        else ["a delete on the dropped host was not released %s: rc %s, %s" % (REASON, typo_rc, answers)]
    )
    named = "hv-typo" in removed.output() and "proxy_gc" in removed.output()
    outcome.check([] if named else ["no warning names the host and GC: %s" % removed.output()[-800:]])
    outcome.check(invariants.one_instance_per_live_uid(target, uids, [], seconds=0))
    fixed_at = time.monotonic()
    report = gc.sweep({target.direct.name: target.direct}, [], target.installation, 0, 120)
    outcome.recovery_seconds = round(time.monotonic() - fixed_at, 2)
    collected = sorted(e["id"] for e in report.get("deleted", []) if e.get("id") in ids)
    outcome.check(
        []
        if collected == sorted(ids)
        else ["GC with the host back collected %s of %s: %s" % (collected, ids, report)]
    )
    outcome.check(invariants.gc_touched_nothing_not_ours(target, [report]))
    outcome.check(invariants.one_instance_per_live_uid(target, [], uids))
    outcome.check(invariants.nothing_left(target, ids))
    outcome.calls = [
        "typo run rc=%d reasons=%s" % (typo_rc, reasons),
        "gc with the host back: %d deleted" % len(collected),
    ]
    return outcome


SCENARIOS = [
    Scenario(
        "ops-host-removed",
        "the instances' libvirt host dropped from the providers entry (a typo) for a delete, put back for GC",
        ("libvirt",),
        no_fault,
        host_removed,
    ),
]
