"""The keys with a provider call under way (waiting for a run, or in one), under their own lock.

The batcher adds a key with its call when reconcile hands it over and removes it when that
call's answer is delivered; while a key is here its reconciles decide nothing new (the answer's
event brings it back). Each entry names its call (the ``Action``): a late copy of an earlier
call's answer (the final results after the streamed one) never settles a newer call of the key.
Made before the Proxy controller and sharding, so sharding's ``busy(shard)`` can ask it without
reaching into the batcher. Lost on a restart at no cost: the runs die with the process.
"""

from __future__ import annotations

import threading

ANY = object()  # settle whatever call the key has


class InFlight:
    def __init__(self):
        self._lock = threading.Lock()
        self._calls: dict = {}  # key -> the call (Action) under way

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._calls

    def __len__(self) -> int:
        with self._lock:
            return len(self._calls)

    def add(self, key: str, call=None) -> None:
        with self._lock:
            self._calls[key] = call

    def holds(self, key: str, call) -> bool:
        """Whether ``call`` is the key's call under way (the very object)."""
        with self._lock:
            return key in self._calls and self._calls[key] is call

    def settle(self, key: str, call=ANY) -> bool:
        """Remove ``key`` when ``call`` is its call under way (``ANY``: whichever); True when
        it was removed."""
        with self._lock:
            if key not in self._calls or (call is not ANY and self._calls[key] is not call):
                return False
            del self._calls[key]
            return True

    def any(self, predicate) -> bool:
        """Whether a key in flight satisfies ``predicate``."""
        with self._lock:
            keys = list(self._calls)
        return any(predicate(k) for k in keys)
