"""A de-duplicating, rate-limited work queue of keys with delayed requeue (client-go's shape).

The queue holds keys, never object snapshots. A key is in at most one of: waiting (due at a
time), processing, or absent. Adding a key that is processing marks it dirty, so it runs again
right after ``done`` instead of twice at once: one reconcile per key at a time. Errors requeue
with per-key exponential backoff (``add_rate_limited``); ``forget`` resets it. ``metrics``
(telemetry/queue_metrics.py) sees adds, depth, time in the queue, work duration and retries.
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
        self._heap = []  # (due, key), lazily cleaned
        self._processing = set()
        self._dirty = {}  # processing key -> earliest due time requested meanwhile
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

    def add_after(self, key: str, delay: float) -> None:
        with self._lock:
            self.metrics.added()
            due = self._clock() + max(0.0, delay)
            if key in self._processing:
                self._dirty[key] = min(due, self._dirty.get(key, due))
                return
            if key in self._due and self._due[key] <= due:
                return  # already due sooner
            self._due[key] = due
            heapq.heappush(self._heap, (due, key))
            self.metrics.depth(len(self._due))
            self._lock.notify_all()

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
                    due, key = self._heap[0]
                    if self._due.get(key) != due:
                        heapq.heappop(self._heap)  # stale entry
                        continue
                    if due > now + (slack if keys else 0.0):
                        break
                    heapq.heappop(self._heap)
                    del self._due[key]
                    self._processing.add(key)
                    self.metrics.handed_out(max(0.0, now - due))
                    self.metrics.started(key, now)
                    keys.append(key)
                if keys:
                    self.metrics.depth(len(self._due))
                    return keys
                next_due = self._heap[0][0] if self._heap else end
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
                due = self._dirty.pop(key)
                self._due[key] = due
                heapq.heappush(self._heap, (due, key))
                self.metrics.depth(len(self._due))
                self._lock.notify_all()

    def shutdown(self) -> None:
        with self._lock:
            self._shutdown = True
            self._lock.notify_all()
