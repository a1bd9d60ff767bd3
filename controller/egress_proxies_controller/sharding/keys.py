"""The glue between the shard Leases and the rest of the controller (``--shards N``, N > 1).

``owns(key)``: the manager and the probe engine dispatch a key only while its Proxy's shard is
held here and not being given up. ``ShardKeys.busy(shard)``: the coordinator gives a shard up
only once none of its keys is being reconciled (the queue's) or has a provider call in flight
(``InFlight``, the batcher's) and no GC sweep claimed it; each is asked under its own lock.
``claim()``: the GC loop's shards, held for the length of its sweep. ``ShardKeys.acquired(shard)``:
every cached key of a shard just taken is queued (the keys were dropped while another replica
owned them).
"""

from __future__ import annotations

import contextlib
import threading

from . import assignment as shards_mod


class ShardKeys:
    """Which shard each key is in, and whether a shard may be given up: needs neither the
    coordinator nor the manager (``in_flight`` is made before both), so the coordinator can be
    built with its callbacks."""

    def __init__(self, count: int, informer, queue, in_flight):
        self.count, self.informer, self.queue, self.in_flight = count, informer, queue, in_flight
        self._key_shard = {}  # key -> shard of the uid last seen for it (a re-created Proxy moves)
        self._claimed = {}  # shard -> GC sweeps using it
        self._lock = threading.Lock()

    def shard_of_key(self, key: str):
        obj = self.informer.get(key)
        uid = ((obj or {}).get("metadata") or {}).get("uid")
        if not uid:
            return None
        shard = shards_mod.shard_of(uid, self.count)
        with self._lock:
            self._key_shard[key] = shard
        return shard

    def busy(self, shard: int) -> bool:
        with self._lock:
            if self._claimed.get(shard):
                return True
            known = dict(self._key_shard)
        # A key whose shard is unknown might be this one's: wait for it too. The queue first: a
        # key it hands to a reconcile enters InFlight before the queue lets go of it.

        def ours(key: str) -> bool:
            return known.get(key, shard) == shard

        return self.queue.processing_any(ours) or self.in_flight.any(ours)

    def acquired(self, shard: int) -> None:
        for key in self.informer.cache_keys():
            if self.shard_of_key(key) == shard:
                self.queue.add(key)

    def claim(self, owned_now) -> set:
        """``owned_now()``'s shards, claimed in the same breath (no hand-over in between)."""
        with self._lock:
            owned = owned_now()
            for shard in owned:
                self._claimed[shard] = self._claimed.get(shard, 0) + 1
        return owned

    def release(self, owned) -> None:
        with self._lock:
            for shard in owned:
                self._claimed[shard] -= 1


class Sharding:
    """``owns`` and ``claim`` over the keys' shards and the coordinator's leases."""

    def __init__(self, keys: ShardKeys, coordinator):
        self.keys, self.coordinator = keys, coordinator
        self.count = keys.count

    def owns(self, key: str) -> bool:
        shard = self.keys.shard_of_key(key)
        return shard is not None and self.coordinator.dispatching(shard)

    @contextlib.contextmanager
    def claim(self):
        """The shards held now, kept from being given up until the block ends."""
        owned = self.keys.claim(self.coordinator.owned)
        try:
            yield owned
        finally:
            self.keys.release(owned)
