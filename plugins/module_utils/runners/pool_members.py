# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Which instances are a ``proxy_pool``'s members, what new ones are called, and which go.

A member is named ``<pool>-<slot>`` and carries the ownership uid ``pool_<pool>_<target>_<slot>``:
both follow from the pool, the target and the slot alone, so a re-run finds what the last run
made and creates nothing. The uid is what makes an instance a member: only an instance listed
by this installation (``list_by_tag``: managed and installation marks) whose uid parses to this
pool is one; anything else (another pool's, another installation's, an unmarked one) is never
counted, kept or removed. ``_`` separates the parts because a pool or target name (a DNS label)
never holds one; the uid fits a Kubernetes and a Compute Engine label value (63 characters of
``[a-z0-9_-]``), so every provider stores it as is.

Which members stay is the ProxyPool planner's rule (controller ``pool_rollout``): each target
keeps at most its share, Running members first (the newest of them), then the oldest others on
their way (Provisioning or Stopped: this run converges them), Terminated ones last; the rest go
in the order Terminated, then other not-Running newest first, then Running oldest first. A
skipped target holds its members that are not Terminated (``holds``), as a ProxyPool's skipped
target holds those that have not failed (the controller states the rule on its own member
model, Proxies rather than listed instances: ``tests/unit/test_pool_skip_rule.py`` keeps the two
equal).
A member is one instance on one backend (``backend``, the provider's ``backend_key``, and its
id): when two providers share a backend and both list one instance (one made before instances
recorded their provider), the copy on its target's provider is the member and the other is a
view of it, never an extra to delete: a pool never deletes a member it also counts as live.

Two runs of one pool at once, where no lock serialises them (issue 28 §3), each end with
``trim``: a run lists the pool again after its creates and keeps ``count`` members by an order
that depends only on what never changes for an instance (``trim_order``: oldest first), never on
states, the spread's order or which run applies it; so whichever run lists last leaves exactly
``count`` members, and no run trims a member any other run's trim keeps.
"""

from __future__ import annotations

import dataclasses
import re

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract

UID_PREFIX = "pool"
MAX_POOL_CHARS = 30
MAX_TARGET_CHARS = 20
MAX_COUNT = 10000

_UID = re.compile(r"^pool_([a-z0-9][-a-z0-9]*)_([a-z0-9][-a-z0-9]*)_(0|[1-9][0-9]{0,5})$")


def member_name(pool: str, slot: int) -> str:
    return "%s-%d" % (pool, slot)


def member_uid(pool: str, target: str, slot: int) -> str:
    return "%s_%s_%s_%d" % (UID_PREFIX, pool, target, slot)


def parse_uid(uid: str):
    """``(pool, target, slot)`` of a member uid, or ``None`` for any other uid."""
    match = _UID.fullmatch(uid or "")
    if match is None:
        return None
    return match.group(1), match.group(2), int(match.group(3))


@dataclasses.dataclass(frozen=True)
class Member:
    """One listed (or just created) instance of the pool and where it belongs."""

    provider: str
    target: str
    slot: int
    instance: contract.Instance
    backend: str = ""  # the provider's backend_key: one instance seen by two providers has one

    @property
    def identity(self) -> tuple:
        """The instance itself, whichever provider listed it."""
        return (self.backend or "provider:" + self.provider, self.instance.id or self.name)

    @property
    def name(self) -> str:
        return self.instance.name

    @property
    def running(self) -> bool:
        return self.instance.state == contract.RUNNING

    @property
    def failed(self) -> bool:
        """Terminated: gone for good, never converged back (the controller's failed member)."""
        return self.instance.state == contract.TERMINATED

    @property
    def stamp(self) -> float:
        """Creation time in epoch seconds; an unknown one counts as the oldest."""
        created = self.instance.created_at
        return created.timestamp() if created else float("-inf")


def members_of(pool: str, provider: str, instances, backend: str = "") -> list:
    """The members among ``instances`` listed from ``provider``: uid of this pool, and the
    name that uid gives (an instance renamed by hand is not trusted as a member)."""
    out = []
    for instance in instances:
        parsed = parse_uid(instance.uid)
        if parsed is None or parsed[0] != pool or instance.name != member_name(pool, parsed[2]):
            continue
        out.append(Member(provider, parsed[1], parsed[2], instance, backend))
    return out


def _keep_order(member: Member) -> tuple:
    if member.running:
        return (0, -member.stamp, member.slot)
    return (2 if member.failed else 1, member.stamp, member.slot)


def delete_order(members: list) -> list:
    """Terminated members, then other not-Running ones, newest first; then Running members
    oldest first."""
    unready = sorted((m for m in members if not m.running), key=lambda m: (not m.failed, -m.stamp, m.slot))
    ready = sorted((m for m in members if m.running), key=lambda m: (m.stamp, m.slot))
    return unready + ready


def holds(members, target: str, provider: str) -> int:
    """Members a skipped ``target`` keeps: its own (on ``provider``) that have not failed, Running
    or on their way to it, so a skip never removes a member that fits."""
    return sum(1 for m in members if m.target == target and m.provider == provider and not m.failed)


def choose(members: list, desired: dict, providers: dict) -> tuple:
    """``(kept, to_go)``: per target at most ``desired[target]`` members (on that target's
    provider, ``providers[target]``), chosen by the keep order; every other member goes, in
    delete order. A member of a target not in ``desired`` or on another provider goes, unless it
    is a kept member's instance seen through another provider of the same backend.

    A name is kept once: when one name is on two backends (two runs that raced before pools
    took locks, or a member made by hand), the copy first in the keep order stays and the other
    goes, so its target gets a member under a free name instead (issue 28 §3)."""
    candidates = sorted(
        (m for m in members if m.target in desired and m.provider == providers[m.target]),
        key=lambda m: (_keep_order(m), m.target),
    )
    kept, held, names = [], {}, set()
    for member in candidates:
        if held.get(member.target, 0) >= desired[member.target] or member.name in names:
            continue
        kept.append(member)
        held[member.target] = held.get(member.target, 0) + 1
        names.add(member.name)
    kept_ids = {m.identity for m in kept}
    to_go = delete_order([m for m in members if m.identity not in kept_ids])
    return kept, to_go


def trim_order(member: Member) -> tuple:
    """A member's place in ``trim``: only what an instance keeps for life (its creation time, an
    unknown one the oldest, then its slot, target and provider), so every run orders one
    instance the same whenever it lists it."""
    return (member.stamp, member.slot, member.target, member.provider, member.identity)


def trim(members: list, count: int, providers: dict) -> tuple:
    """``(kept, surplus)`` of a listing taken after a run's creates: the first ``count`` members
    in ``trim_order``, one per name, of the targets in ``providers`` (target -> its provider);
    every other member is surplus, but for a kept instance seen through another provider of its
    backend. A run alone lists at most ``count`` names there: nothing is surplus.

    Two runs never trim below ``count``: a member is surplus only when ``count`` names, or its
    own name, come before it in the fixed order among what was listed; those are also before it
    in a listing of everything, so a member that listing keeps is kept by every listing that
    holds it, whatever the listing missed or still showed while another run deleted it. The run
    that lists last, after both runs' creates and the other's trim, keeps exactly those members.
    """
    candidates = sorted(
        (m for m in members if m.target in providers and m.provider == providers[m.target]), key=trim_order
    )
    kept, names = [], set()
    for member in candidates:
        if len(kept) < count and member.name not in names:
            kept.append(member)
            names.add(member.name)
    kept_ids = {m.identity for m in kept}
    return kept, delete_order([m for m in members if m.identity not in kept_ids])


def free_slots(used, how_many: int) -> list:
    """The ``how_many`` smallest slots not in ``used`` (so names stay short and reused)."""
    used = set(used)
    out, slot = [], 0
    while len(out) < how_many:
        if slot not in used:
            out.append(slot)
        slot += 1
    return out
