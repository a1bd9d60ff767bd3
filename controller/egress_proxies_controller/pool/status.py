"""A pool's status and the Events of its transitions, computed from one tick's view.

Pure: the reconciler hands in what it saw and planned; tests build the inputs by hand. The
problems a tick met are recorded in the Published condition, and a problem's Event is sent
when the condition did not already say it: what was reported is in the pool, not in the
process, so a restarted controller does not repeat it.
"""

from __future__ import annotations

from .. import api
from ..kube import conditions
from .model import COND_PROGRESSING, COND_PUBLISHED, COND_SPREAD_DEGRADED, Pool


def published(pool: Pool, conds: list, problems: list, now: str) -> tuple:
    """(conditions, events) with Published set from ``problems`` (never a value in them): a
    PublishFailed Warning for each problem when the condition said otherwise."""
    message = "; ".join(problems)
    was = conditions.find(conds, COND_PUBLISHED) or {}
    events = []
    if problems and (was.get("status") != "False" or was.get("message") != message):
        events = [("Warning", "PublishFailed", problem) for problem in problems]
    conds = conditions.set_condition(
        conds,
        COND_PUBLISHED,
        not problems,
        "PublishFailed" if problems else "Published",
        message or "the endpoints are up to date",
        pool.generation,
        now,
    )
    return conds, events


def compute(
    pool: Pool, members: list, desired: dict, degraded: dict, plan, now: str, progress: str, problems=()
) -> tuple:
    """(status, events) for ``pool``. ``degraded`` maps a skipped target to (reason, since);
    ``progress`` says what the tick did (for Progressing's message); ``problems`` what it could
    not do (Published)."""
    old = pool.status
    conds, events = published(pool, old.get("conditions") or [], list(problems), now)
    live = [m for m in members if not m.deleting]
    ready = sum(1 for m in live if m.ready)
    targets = []
    for target in pool.targets:
        mine = [m for m in live if m.target == target.name]
        entry = {
            "name": target.name,
            "desired": desired.get(target.name, 0),
            "replicas": len(mine),
            "readyReplicas": sum(1 for m in mine if m.ready),
        }
        if target.name in degraded:
            entry["degraded"], entry["degradedSince"] = degraded[target.name]
        targets.append(entry)

    is_ready = ready >= pool.replicas and len(live) == pool.replicas
    message = "%d of %d members Ready" % (ready, pool.replicas)
    conds = conditions.set_condition(
        conds,
        api.COND_READY,
        is_ready,
        "AllReady" if is_ready else "NotAllReady",
        message,
        pool.generation,
        now,
    )
    if is_ready and not conditions.is_true(old.get("conditions"), api.COND_READY):
        events.append(("Normal", "Ready", message))
    conds = conditions.set_condition(
        conds,
        COND_PROGRESSING,
        not plan.settled,
        "Complete" if plan.settled else "Rolling",
        progress if not plan.settled else "every member is current and Ready",
        pool.generation,
        now,
    )
    was = conditions.find(old.get("conditions"), COND_SPREAD_DEGRADED) or {}
    if degraded:
        text = "; ".join(
            "target %s skipped (%s)" % (name, reason) for name, (reason, _s) in sorted(degraded.items())
        )
        text += ": its share goes to the other targets"
        conds = conditions.set_condition(
            conds, COND_SPREAD_DEGRADED, True, "TargetSkipped", text, pool.generation, now
        )
        if was.get("message") != text:
            events.append(("Warning", "SpreadDegraded", text))
    else:
        conds = conditions.set_condition(
            conds,
            COND_SPREAD_DEGRADED,
            False,
            "AllTargets",
            "every target takes its share",
            pool.generation,
            now,
        )
        if was.get("status") == "True":
            events.append(("Normal", "SpreadRecovered", "every target takes its share again"))
    status = {
        "replicas": len(live),
        "readyReplicas": ready,
        "updatedReplicas": plan.updated,
        "selector": pool.selector,
        "observedGeneration": pool.generation,
        "targets": targets,
        "conditions": conds,
    }
    return status, events
