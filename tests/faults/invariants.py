"""The issue's six invariants, each a function that returns what it found wrong (empty: held).

They read the backend itself through the target (``records``, ``present``, ``processes``,
``leftovers``, ``captured_output``), never the project's own list, and judge the recorded
calls of a scenario (calls.CallLog).
"""

from __future__ import annotations

import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors

#: answers a transient fault may give: it worked, or it could not tell / was limited
TRANSIENT_OUTCOMES = ("ok", errors.TRANSIENT, errors.QUOTA_EXCEEDED)


def one_instance_per_live_uid(target, live: list, gone: list, seconds: float = 30.0) -> list:
    """(1) exactly one instance per live owner uid, and none (once GC's asynchronous deletes
    have finished, a bounded wait) for an owner that is gone."""
    end = time.monotonic() + seconds
    while True:
        counts = target.uid_counts()
        wrong = [
            "uid %s has %d instances on the backend, want 1" % (u, counts[u]) for u in live if counts[u] != 1
        ]
        wrong += ["uid %s (owner gone) still has %d instances" % (u, counts[u]) for u in gone if counts[u]]
        if not wrong or time.monotonic() > end:
            return wrong
        time.sleep(0.2)


def gc_touched_nothing_not_ours(target, reports: list) -> list:
    """(2) the unmarked and the other installation's instances are still there, and no GC
    report claims to have deleted one."""
    wrong = ["%s (not ours) is gone from the backend" % n for n in target.others if not target.present(n)]
    for report in reports:
        for entry in report.get("deleted", []):
            if entry.get("name") in target.others or entry.get("installation") != target.installation:
                wrong.append("GC deleted %s, not ours" % entry.get("id"))
    return wrong


def no_false_not_found(log, records: list) -> list:
    """(3) every NotFound was given while the instance really was absent; the module telemetry
    records of the scenario (``records``) hold no NotFound the calls did not see."""
    wrong = []
    for call in log.calls:
        if call.outcome == errors.NOT_FOUND and call.present_after:
            wrong.append("%s(%s) answered not_found while it was on the backend" % (call.op, call.target))
    seen = sum(1 for c in log.calls if c.outcome == errors.NOT_FOUND)
    recorded = sum(1 for r in records if r["class"] == errors.NOT_FOUND)
    if recorded > seen:
        wrong.append("telemetry holds %d not_found answers, the calls saw %d" % (recorded, seen))
    return wrong


def no_permanent_from_transient(log, recovered: bool, settle_error: str) -> list:
    """(4) a transient fault is never answered Permanent, no call overruns its deadline, and the
    provider works again after the fault heals (nothing latched)."""
    wrong = []
    for call in log.calls:
        if call.outcome == "hung":
            wrong.append("%s(%s) did not return within its deadline + grace" % (call.op, call.target))
        elif call.outcome not in (*TRANSIENT_OUTCOMES, errors.NOT_FOUND):
            wrong.append(
                "%s(%s) answered %s to a transient fault: %s"
                % (call.op, call.target, call.outcome, call.text[:200])
            )
    if not recovered:
        wrong.append("not recovered after the fault healed: %s" % settle_error[:300])
    return wrong


def no_secret(sentinel: str, texts: dict) -> list:
    """(5) the cloud-init sentinel is in none of the outputs, logs and files gathered."""
    return ["the cloud-init sentinel is in %s" % where for where, text in texts.items() if sentinel in text]


def nothing_left(target, provider_ids: list, seconds: float = 30.0) -> list:
    """(6) after clean-up no instance, volume, file or process of the run remains (deletion is
    asynchronous on some backends: watched for a bounded time)."""
    end = time.monotonic() + seconds
    while True:
        wrong = []
        for provider_id in provider_ids:
            wrong += ["left behind: %s" % item for item in target.leftovers(provider_id)]
        wrong += ["left behind: %s" % item for item in target.processes()]
        if not wrong or time.monotonic() > end:
            return wrong
        time.sleep(0.2)
