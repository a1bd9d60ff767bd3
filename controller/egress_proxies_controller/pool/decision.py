"""What one pool does next, decided from one snapshot: pure, no I/O, table-tested.

From the pool, its members, each target's revision, the providers file's names and the time:
which targets are skipped and why (``degraded``), how many members each target should hold
(the ProxyPool's split), and which members to create and delete under the pool's budget, each
delete with its reason. pool/controller.py carries a ``Decision`` out and writes what it did.
"""

from __future__ import annotations

import dataclasses

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from . import rollout, spread
from .model import POOL_LABEL, REVISION_LABEL, TARGET_LABEL, Member, Pool, owner_reference, parse_time

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pool_split


@dataclasses.dataclass(frozen=True)
class Decision:
    degraded: dict  # target -> (reason, since) for every target skipped now
    desired: dict  # target -> members it should hold
    plan: rollout.Plan
    reasons: dict  # member name -> why it is deleted (TargetRemoved, Outdated, MaxAge, Failed, ScaleDown)


def decide(
    pool: Pool, members: list, revisions: dict, configured: set, now: float, stamp: str, target_retry: float
) -> Decision:
    """The whole decision for one tick; ``stamp`` is now as RFC 3339 (a new skip's since)."""
    skipped = degraded(pool, members, revisions, configured, now, stamp, target_retry)
    # A skipped target keeps what it holds (Ready or on its way), none when its provider is gone.
    providers = {t.name: t.provider for t in pool.targets}
    caps = spread.skip_caps(skipped, providers, configured, members, revisions)
    desired = pool_split.split(pool.replicas, pool.targets, caps)
    # A member being deleted on a provider that left the file cannot go until it is back:
    # it does not hold the pool's room for replacements.
    counted = [m for m in members if not (m.deleting and m.provider not in configured)]
    surge, unavailable = rollout.budget(pool.replicas, pool.max_surge, pool.max_unavailable)
    plan = rollout.plan(counted, desired, revisions, now, pool.max_age, pool.replicas, surge, unavailable)
    by_name = {m.name: m for m in members}
    reasons = {name: why(by_name[name], revisions, pool, now) for name in plan.deletes}
    return Decision(skipped, desired, plan, reasons)


def degraded(
    pool: Pool, members: list, revisions: dict, configured: set, now: float, stamp: str, target_retry: float
) -> dict:
    """Target -> (reason, since) for every target skipped now: its provider is not in the
    providers file, or one of its current members failed (for ``target_retry`` seconds)."""
    before = {t.get("name"): t for t in pool.status.get("targets") or [] if t.get("degraded")}
    out = {}
    for target in pool.targets:
        since = (before.get(target.name) or {}).get("degradedSince") or stamp
        if target.provider not in configured:
            out[target.name] = ("provider %r is not in the providers file" % target.provider, since)
            continue
        failing = [
            m
            for m in members
            if m.target == target.name
            and m.failure
            and m.revision == revisions[target.name]
            and not m.deleting
        ]
        if failing:
            out[target.name] = ("member %s: %s" % (failing[0].name, failing[0].failure), since)
        elif (
            target.name in before
            and before[target.name]["degraded"].startswith("member ")  # not "provider ...": it is back
            and now - parse_time(since) < target_retry
        ):
            out[target.name] = (before[target.name]["degraded"], since)
    return out


def why(member: Member, revisions: dict, pool: Pool, now: float) -> str:
    """The reason a member planned for deletion goes (its Event and metric label)."""
    if member.target not in revisions:
        return "TargetRemoved"
    if member.revision != revisions[member.target]:
        return "Outdated"
    if pool.max_age and now - member.created >= pool.max_age:
        return "MaxAge"
    if member.failure:
        return "Failed"
    return "ScaleDown"


def member_body(pool: Pool, target, revisions: dict, copy: str = "") -> dict:
    """A new member of ``target``: a generated name, the pool's labels and its ownerReference."""
    return {
        "apiVersion": "crawl.example.com/v1alpha1",
        "kind": "Proxy",
        "metadata": {
            "generateName": pool.name[:52] + "-",
            "namespace": pool.namespace,
            "labels": {
                POOL_LABEL: pool.name,
                TARGET_LABEL: target.name,
                REVISION_LABEL: revisions[target.name],
            },
            "ownerReferences": [owner_reference(pool)],
        },
        "spec": pool.member_spec(target, copy),
    }
