"""What a pool does next: which members to create and which to delete, under its budget.

A pure function of the members, the split (pool_spread) and the current revision per target,
so every rule below is unit-tested without a cluster:

* a member is *current* when its target is in the split, it carries its target's revision
  (template, spread overrides and the rotate-now token) and it is younger than maxAge;
* each target keeps at most its share of current members, Ready ones first (the newest of
  them), then the oldest not-Ready ones that have not failed, failed ones last; every other
  member is to go;
* creates: what each target lacks, while the pool has fewer than replicas + maxSurge members
  (members being deleted count: their instances still exist);
* deletes: every not-Ready member that is to go, failed ones first, newest first (they serve
  nobody); then Ready ones, oldest first, only while at least replicas - maxUnavailable Ready members remain.

Scale-down is the same rule: excess members are "to go", so the newest not-Ready go first,
then the oldest.
"""

from __future__ import annotations

import dataclasses
import math

from .model import Member


@dataclasses.dataclass
class Plan:
    creates: dict  # target -> how many members to create now
    deletes: list  # member names, in the order they go
    updated: int  # current members kept
    settled: bool  # nothing to create or delete, every kept member Ready


def _resolve(value, replicas: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * replicas / 100.0
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


def budget(replicas: int, max_surge, max_unavailable) -> tuple:
    """(surge, unavailable) in members, as a Deployment resolves them: a percentage of replicas,
    surge rounded up and unavailable down; both zero would never move, so unavailable is 1."""
    surge = _resolve(max_surge, replicas, True)
    unavailable = _resolve(max_unavailable, replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _keep_order(member: Member) -> tuple:
    """Ready first (newest), then on their way (oldest), then failed: a skipped target capped at
    what it holds keeps exactly the members that have not failed."""
    if member.ready:
        return (0, -member.created, member.name)
    return (2 if member.failure else 1, member.created, member.name)


def delete_order(members: list) -> list:
    """Scale-down order: failed members, then other not-Ready ones, newest first; then Ready
    members oldest first."""
    unready = sorted((m for m in members if not m.ready), key=lambda m: (not m.failure, -m.created, m.name))
    ready = sorted((m for m in members if m.ready), key=lambda m: (m.created, m.name))
    return unready + ready


def plan(
    members: list,
    desired: dict,
    revisions: dict,
    now: float,
    max_age: float,
    replicas: int,
    surge: int,
    unavailable: int,
) -> Plan:
    live = [m for m in members if not m.deleting]

    def current(m: Member) -> bool:
        young = not max_age or now - m.created < max_age
        return m.target in desired and m.revision == revisions.get(m.target) and young

    kept, lacking = set(), {}
    for target, count in desired.items():
        good = sorted((m for m in live if m.target == target and current(m)), key=_keep_order)
        kept.update(m.name for m in good[:count])
        if count > len(good):
            lacking[target] = count - len(good)
    to_go = delete_order([m for m in live if m.name not in kept])

    room = max(0, replicas + surge - len(members))
    creates = {}
    for target in desired:  # in spread order: a short room goes to the first targets first
        n = min(lacking.get(target, 0), room)
        if n:
            creates[target] = n
            room -= n

    ready = sum(1 for m in live if m.ready)
    may_lose = ready - max(0, replicas - unavailable)
    deletes = []
    for member in to_go:
        if member.ready:
            if may_lose <= 0:
                break
            may_lose -= 1
        deletes.append(member.name)
    settled = (
        not lacking
        and not to_go
        and len(live) == len(members)
        and all(m.ready for m in live if m.name in kept)
    )
    return Plan(creates, deletes, len(kept), settled)
