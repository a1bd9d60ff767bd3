"""The keys with a provider call under way (waiting for a run, or in one), under their own lock.

The batcher adds a key when reconcile hands it a call and removes it when the answer is
delivered; while a key is here its reconciles decide nothing new (the answer's event brings it
back). Made before the Proxy controller and sharding, so sharding's ``busy(shard)`` can ask it
without reaching into the batcher. Lost on a restart at no cost: the runs die with the process.
"""

from __future__ import annotations

import threading


class InFlight:
    def __init__(self):
        self._lock = threading.Lock()
        self._keys: set = set()

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._keys

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)

    def add(self, key: str) -> None:
        with self._lock:
            self._keys.add(key)

    def settle(self, key: str) -> bool:
        """Remove ``key``; True when it was here (its answer is the first one delivered)."""
        with self._lock:
            if key not in self._keys:
                return False
            self._keys.discard(key)
            return True

    def any(self, predicate) -> bool:
        """Whether a key in flight satisfies ``predicate``."""
        with self._lock:
            keys = list(self._keys)
        return any(predicate(k) for k in keys)
