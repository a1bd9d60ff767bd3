"""Creates and deletes of members a pool made and has not seen through its watch yet.

ReplicaSet's expectations: the Proxy informer's cache lags the pool's own writes, and a pool
planned from a cache without the member it just made would make it again (or count one it
just deleted). So each create and delete is expected, the Proxy informer's changes meet the
expectations, and a pool with any unmet is not planned until they are met or ``ttl`` passed
(a watch event lost for good must not stop the pool). Nothing is written into the cache.
"""

from __future__ import annotations

import dataclasses
import threading
import time


@dataclasses.dataclass
class _Pending:
    creates: int = 0  # members made (their names are the API server's) not seen yet
    deletes: dict = dataclasses.field(default_factory=dict)  # member key -> uid still seen alive
    since: float = 0.0  # when the oldest unmet expectation was made


class Expectations:
    def __init__(self, ttl: float = 300.0, clock=time.monotonic):
        self.ttl, self.clock = ttl, clock
        self._pending: dict[str, _Pending] = {}  # pool key -> what it waits for
        self._lock = threading.Lock()

    def expect_creates(self, pool_key: str, count: int) -> None:
        """Before ``count`` creates: a member's watch event may come before the call returns."""
        if count > 0:
            with self._lock:
                self._entry(pool_key).creates += count

    def expect_delete(self, pool_key: str, member_key: str, uid: str) -> None:
        """Before a delete, for the same reason."""
        with self._lock:
            self._entry(pool_key).deletes[member_key] = uid

    def create_failed(self, pool_key: str) -> None:
        """A create that did not happen is not waited for."""
        with self._lock:
            pending = self._pending.get(pool_key)
            if pending is not None:
                pending.creates = max(0, pending.creates - 1)
                self._drop_if_met(pool_key, pending)

    def delete_failed(self, pool_key: str, member_key: str) -> None:
        with self._lock:
            pending = self._pending.get(pool_key)
            if pending is not None:
                pending.deletes.pop(member_key, None)
                self._drop_if_met(pool_key, pending)

    def observe(self, pool_key: str, member_key: str, old: dict | None, new: dict | None) -> None:
        """A change of one of the pool's members in the Proxy cache: a member new to the cache
        meets a create; a member gone, being deleted, or replaced by another object of its
        name meets its delete."""
        with self._lock:
            pending = self._pending.get(pool_key)
            if pending is None:
                return
            if old is None and new is not None and pending.creates:
                pending.creates -= 1
            uid = pending.deletes.get(member_key)
            meta = (new or {}).get("metadata") or {}
            if uid is not None and (new is None or meta.get("deletionTimestamp") or meta.get("uid") != uid):
                del pending.deletes[member_key]
            self._drop_if_met(pool_key, pending)

    def satisfied(self, pool_key: str) -> bool:
        """True when the pool may be planned: nothing unmet, or unmet for longer than ``ttl``
        (then forgotten, and the cache is trusted as it is)."""
        with self._lock:
            pending = self._pending.get(pool_key)
            if pending is None:
                return True
            if self.clock() - pending.since >= self.ttl:
                del self._pending[pool_key]
                return True
            return False

    def wait_left(self, pool_key: str) -> float:
        """Seconds until the pool's unmet expectations expire (0 when it has none)."""
        with self._lock:
            pending = self._pending.get(pool_key)
            return 0.0 if pending is None else max(0.0, pending.since + self.ttl - self.clock())

    def forget(self, pool_key: str) -> None:
        with self._lock:
            self._pending.pop(pool_key, None)

    def _drop_if_met(self, pool_key: str, pending: _Pending) -> None:
        if not (pending.creates or pending.deletes):
            del self._pending[pool_key]

    def _entry(self, pool_key: str) -> _Pending:
        pending = self._pending.get(pool_key)
        if pending is None:
            pending = self._pending[pool_key] = _Pending(since=self.clock())
        return pending
