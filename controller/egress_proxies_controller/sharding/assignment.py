"""Which shard a Proxy is in, and which replica owns which shard: pure functions, no I/O.

A Proxy's shard is ``uid_shards.shard_of`` (module_utils), the one function proxy_gc's
``uid_shards`` option uses too: ``int(sha256(uid)[:16 hex digits], 16) % count``, stable across
processes, hosts and Python versions.

Shards go to the live members by rendezvous (highest-random-weight) hashing of
``sha256("shard/identity")``, with bounded loads so that every member holds ``count // n`` or
one more. Every replica that sees the same members computes the same assignment.
"""

from __future__ import annotations

import hashlib

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.uid_shards import shard_of

__all__ = ["assign", "owned_by", "shard_of"]


def _weight(shard: int, member: str) -> int:
    return int(hashlib.sha256(("%d/%s" % (shard, member)).encode()).hexdigest()[:16], 16)


def assign(count: int, members) -> dict:
    """``{shard: member}`` for every shard (empty without members).

    Rendezvous hashing with bounded loads: every (shard, member) pair by descending weight, a
    shard going to the first member of its pairs that still has room, where room is
    ``count // n`` shards, or one more for the first ``count % n`` members to reach it. So loads
    differ by at most one, and when a member goes its shards move plus at most a couple more
    (survivors' rooms grow, never shrink: nobody must give a shard away to make room)."""
    members = sorted(set(members))
    if not members:
        return {}
    low, extra = divmod(count, len(members))
    pairs = sorted(((_weight(s, m), -s, m) for s in range(count) for m in members), reverse=True)
    load = dict.fromkeys(members, 0)
    out = {}
    for pair in pairs:
        shard, member = -pair[1], pair[2]
        if shard in out or load[member] > low or (load[member] == low and extra == 0):
            continue
        if load[member] == low:
            extra -= 1  # this member takes one of the count % n larger shares
        load[member] += 1
        out[shard] = member
    return out


def owned_by(count: int, members, identity: str) -> set:
    """The shards ``identity`` should hold given the live ``members``."""
    return {s for s, m in assign(count, members).items() if m == identity}
