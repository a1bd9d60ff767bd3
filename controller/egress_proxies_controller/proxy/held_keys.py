"""The keys a batch, run or waiting list of the manager holds right now, and the lock over them.

Made before the manager and the shard coordinator, so neither has to be wired to the other after
construction: the manager records what it holds here (under ``lock``, which also guards its own
dispatch bookkeeping), and sharding's ``busy(shard)`` asks here whether a key of a shard being
given up is still held.
"""

from __future__ import annotations

import threading


class HeldKeys:
    def __init__(self):
        self.lock = threading.Lock()
        self.keys: dict = {}  # key -> the batch (its key list), run (its group) or waiting list

    def any(self, predicate) -> bool:
        """Whether a held key satisfies ``predicate``."""
        with self.lock:
            return any(predicate(k) for k in self.keys)
