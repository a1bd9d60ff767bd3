# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ``uid_shards`` option of ``proxy_gc``: collect only instances whose UID is in owned shards.

Several controller replicas split the Proxies by a stable hash of their UID; each collects only
the orphans of the shards it holds, so two replicas never delete the same instance. The shard of
a UID is ``int(sha256(uid)[:16 hex digits], 16) % count``: ``shard_of``, which the controller's
sharding/assignment.py imports from here (docs/architecture.md, import rule 11).
"""

from __future__ import annotations

import hashlib

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import UsageError

MAX_COUNT = 4096


def shard_of(uid: str, count: int) -> int:
    """The shard of a Proxy UID among ``count`` shards."""
    return int(hashlib.sha256(uid.encode()).hexdigest()[:16], 16) % count


def _integer(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError("%s: must be an integer, got %r" % (field, value))
    try:
        return int(value)
    except ValueError:
        raise UsageError("%s: must be an integer, got %r" % (field, value)) from None


def parse(value) -> tuple | None:
    """``{count: N, owned: [i, ...]}`` -> ``(N, frozenset(owned))``; None when unset.

    Raises ``UsageError`` naming the field on bad input (nothing is listed or deleted then)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UsageError("uid_shards: must be a dict with count and owned, got %r" % (value,))
    unknown = sorted(set(value) - {"count", "owned"})
    if unknown:
        raise UsageError("uid_shards: unknown key(s) %s (expected count and owned)" % ", ".join(unknown))
    if value.get("count") is None:
        raise UsageError("uid_shards.count: required")
    count = _integer(value["count"], "uid_shards.count")
    if not 1 <= count <= MAX_COUNT:
        raise UsageError("uid_shards.count: must be between 1 and %d, got %d" % (MAX_COUNT, count))
    owned = value.get("owned")
    if not isinstance(owned, list):
        raise UsageError("uid_shards.owned: required, a list of shard numbers (possibly empty)")
    shards = set()
    for index, item in enumerate(owned):
        shard = _integer(item, "uid_shards.owned[%d]" % index)
        if not 0 <= shard < count:
            raise UsageError(
                "uid_shards.owned[%d]: %d is not a shard of %d (0 to %d)" % (index, shard, count, count - 1)
            )
        shards.add(shard)
    return count, frozenset(shards)
