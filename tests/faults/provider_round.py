"""The round every provider scenario runs: set up, fault, heal, settle, check, clean up.

Before the fault: a live instance B (with a cloud-init sentinel) and an orphan O (its owner
gone) are created directly. Under the fault, through the faulted provider with a short deadline:
create X (sentinel too), get B, list, a GC sweep with live owners {B, X}. After the fault heals:
the same calls again until all succeed (bounded settle: the recovery time), a second GC sweep,
then the invariants, then clean-up and the leftover check.
"""

from __future__ import annotations

import time
import uuid

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import gc
from faults import invariants
from faults.calls import CallLog
from faults.results import Outcome

#: each call's deadline while the fault is on
FAULT_DEADLINE = 3.0
#: how long the system gets to answer again after the fault heals
SETTLE_SECONDS = 45.0


def sentinel_cloud_init() -> tuple:
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    return sentinel, "#cloud-config\nwrite_files:\n- content: %s\n  path: /etc/secret\n" % sentinel


def sweep(target, live: list, seconds: float) -> dict:
    return gc.sweep({target.faulted.name: target.faulted}, live, target.installation, 0, seconds)


def settle(target, req_x, b_id: str) -> tuple:
    """Retry until create(X), get(B) and a list holding both answer; returns (x_id, error)."""
    end = time.monotonic() + SETTLE_SECONDS
    error = ""
    while time.monotonic() < end:
        try:
            x_id = target.faulted.create(req_x, Deadline(15))
            target.faulted.get(b_id, Deadline(15))
            listed = {i.id for i in target.faulted.list_by_tag(Deadline(15))}
            if {x_id, b_id} <= listed:
                return x_id, ""
            error = "list lacks %s" % sorted({x_id, b_id} - listed)
        except Exception as exc:  # retried until the bound; the last one is reported
            error = "%s: %s" % (type(exc).__name__, exc)
        time.sleep(0.3)
    return None, error


def delete_retried(target, provider_id: str, attempts: int = 3) -> None:
    """Clean-up through the direct provider; a restart scenario may have cut its pooled
    connection too, so a failed delete is tried again (the leftover check says what stayed)."""
    for _attempt in range(attempts):
        try:
            target.direct.delete(provider_id, Deadline(60))
            return
        except Exception:
            time.sleep(1)


def run(target, scenario, extra_texts=lambda: {}) -> Outcome:
    """One scenario's round on ``target``; ``scenario.inject(target)`` is the fault (a context
    manager, its value the number of faults injected)."""
    outcome = Outcome(scenario.name, target.column, scenario.description)
    sentinel, cloud_init = sentinel_cloud_init()
    uids = {k: "%s-%s" % (k, uuid.uuid4().hex) for k in ("b", "x", "o")}
    req_b = target.request(uids["b"], cloud_init)
    req_x = target.request(uids["x"], cloud_init)
    seen_records = len(target.telemetry.records())  # the scenario's own records come after
    b_id = target.direct.create(req_b, Deadline(60))
    o_id = target.direct.create(target.request(uids["o"]), Deadline(60))
    x_id = None
    log = CallLog(FAULT_DEADLINE)
    live = [uids["b"], uids["x"]]
    reports = []
    try:
        with scenario.inject(target) as injected:
            outcome.faults = injected
            answers = log.call_all(
                [
                    ("create", uids["x"], target.faulted.create, req_x),
                    ("get", b_id, target.faulted.get, b_id),
                    ("list", "", target.faulted.list_by_tag),
                    ("gc", "", lambda d: sweep(target, live, d.remaining())),
                ]
            )
            reports.append(answers[-1] or {})
            for call in log.calls:
                if call.outcome == "not_found":
                    call.present_after = target.present(call.target.rsplit("/", 1)[-1])
        healed = time.monotonic()
        x_id, settle_error = settle(target, req_x, b_id)
        outcome.recovery_seconds = round(time.monotonic() - healed, 2)
        reports.append(sweep(target, live, 30))
        outcome.check(invariants.one_instance_per_live_uid(target, live, [uids["o"]]))
        outcome.check(invariants.gc_touched_nothing_not_ours(target, reports))
        outcome.check(invariants.no_false_not_found(log, target.telemetry.records()[seen_records:]))
        outcome.check(invariants.no_permanent_from_transient(log, x_id is not None, settle_error))
        texts = {"call %s" % c.op: c.text for c in log.calls}
        texts.update(
            telemetry=repr(target.telemetry.records()), gc=repr(reports), backend=target.captured_output()
        )
        texts.update(extra_texts())
        outcome.check(invariants.no_secret(sentinel, texts))
    finally:
        outcome.calls = log.outcomes()
        ids = [b_id, o_id] + (
            [x_id] if x_id else [target.faulted.id_for(req_x.name, req_x.placement, req_x.namespace)]
        )
        for provider_id in ids:
            if provider_id:
                delete_retried(target, provider_id)
    outcome.check(invariants.nothing_left(target, [i for i in ids if i]))
    return outcome
