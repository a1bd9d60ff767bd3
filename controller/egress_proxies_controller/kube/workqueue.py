"""A de-duplicating, rate-limited work queue of keys with delayed requeue (client-go's shape).

The queue holds keys, never object snapshots. A key is in at most one of: waiting (due at a
time), processing, or absent. Adding a key that is processing marks it dirty, so it runs again
right after ``done`` instead of twice at once: one reconcile per key at a time. Errors requeue
with per-key exponential backoff (``add_rate_limited``); ``forget`` resets it. ``metrics``
(telemetry/queue_metrics.py) sees adds, depth, time in the queue, work duration and retries.

``add_first`` queues a key ahead of every key waiting at the normal priority (controller-runtime's
priority queue has the same idea): a key whose answer came is one status write from done, and in
a burst it would otherwise wait behind hundreds of new keys that each have their whole way ahead
(the shortest remaining work first: the users' median wait is the shortest that way).
"""

from __future__ import annotations

import heapq
import threading
import time

from ..telemetry.queue_metrics import NoQueueMetrics


class WorkQueue:
    def __init__(self, base_delay: float = 1.0, max_delay: float = 300.0, clock=time.monotonic, metrics=None):
        self._lock = threading.Condition()
        self._due = {}  # key -> due time (waiting keys)
        self._first = set()  # waiting keys ahead of the others (add_first)
        self._heap = []  # (0 first / 1 the others, due, key), lazily cleaned
        self._processing = set()
        self._dirty = {}  # processing key -> earliest due time requested meanwhile
        self._dirty_first = set()  # processing keys added with add_first meanwhile
        self._failures = {}
        self._base, self._max = base_delay, max_delay
        self._clock = clock
        self._shutdown = False
        self.metrics = metrics or NoQueueMetrics()

    def __len__(self) -> int:
        with self._lock:
            return len(self._due)

    def add(self, key: str) -> None:
        self.add_after(key, 0.0)

    def add_first(self, key: str) -> None:
        """``key`` due now, ahead of every key waiting at the normal priority."""
        self.add_after(key, 0.0, first=True)

    def add_after(self, key: str, delay: float, first: bool = False) -> None:
        with self._lock:
            self.metrics.added()
            due = self._clock() + max(0.0, delay)
            if key in self._processing:
                self._dirty[key] = min(due, self._dirty.get(key, due))
                if first:
                    self._dirty_first.add(key)
                return
            waiting = self._due.get(key)
            promoted = first and key not in self._first
            if waiting is not None and waiting <= due and not promoted:
                return  # already due sooner
            self._wait(key, due if waiting is None else min(due, waiting), first)
            self._lock.notify_all()

    def _wait(self, key: str, due: float, first: bool) -> None:
        """(lock held) ``key`` waiting until ``due``; ``first``: ahead of the others."""
        self._due[key] = due
        if first:
            self._first.add(key)
        heapq.heappush(self._heap, (self._tier(key), due, key))
        self.metrics.depth(len(self._due))

    def _tier(self, key: str) -> int:
        return 0 if key in self._first else 1

    def add_rate_limited(self, key: str) -> None:
        with self._lock:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            self.metrics.retried()
        self.add_after(key, min(self._max, self._base * (2**failures)))

    def forget(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        with self._lock:
            return self._failures.get(key, 0)

    def pop_due(self, limit: int, wait: float, slack: float = 0.0) -> list:
        """Up to ``limit`` due keys (marked processing), waiting up to ``wait`` s for the first.
        Keys due within ``slack`` s after the first due one come too: keys meant to come due
        together (a poll round) are never split by the microseconds between their due times."""
        end = self._clock() + wait
        with self._lock:
            while True:
                if self._shutdown:
                    return []
                now = self._clock()
                keys = []
                while self._heap and len(keys) < limit:
                    tier, due, key = self._heap[0]
                    if self._due.get(key) != due or self._tier(key) != tier:
                        heapq.heappop(self._heap)  # stale entry
                        continue
                    if due > now + (slack if keys else 0.0):
                        break  # (keys added first are due when added: none waits behind this)
                    heapq.heappop(self._heap)
                    del self._due[key]
                    self._first.discard(key)
                    self._processing.add(key)
                    self.metrics.handed_out(max(0.0, now - due))
                    self.metrics.started(key, now)
                    keys.append(key)
                if keys:
                    self.metrics.depth(len(self._due))
                    return keys
                next_due = self._heap[0][1] if self._heap else end
                timeout = min(end, next_due) - now
                if now >= end:
                    return []
                self._lock.wait(max(0.001, timeout))

    def processing_any(self, predicate) -> bool:
        """Whether a key handed out and not yet done satisfies ``predicate`` (sharding asks
        before it gives a shard up)."""
        with self._lock:
            keys = list(self._processing)
        return any(predicate(k) for k in keys)

    def done(self, key: str) -> None:
        with self._lock:
            self._processing.discard(key)
            self.metrics.finished(key, self._clock())
            if key in self._dirty:
                first = key in self._dirty_first
                self._dirty_first.discard(key)
                self._wait(key, self._dirty.pop(key), first)
                self._lock.notify_all()

    def shutdown(self) -> None:
        with self._lock:
            self._shutdown = True
            self._lock.notify_all()
