"""The work queue's metrics under the names controller-runtime exports (client-go's workqueue
metrics provider), so the dashboards and alerts users already have for operators work here too.

The queue calls the hooks; timestamps are the queue's own clock. A key's time in the queue
counts from when it became due (a delayed requeue is not waiting before its delay is over, as
in client-go's delaying queue), its work from when it was handed out until ``done``.
"""

from __future__ import annotations

import threading
import time

from prometheus_client import Counter, Gauge, Histogram

# client-go's workqueue buckets: 1 µs to 10 s, by decades (queue latency and work duration).
BUCKETS = tuple(10.0**e for e in range(-6, 2))


class NoQueueMetrics:
    """What a queue without metrics calls: nothing."""

    def added(self) -> None: ...
    def handed_out(self, waited: float) -> None: ...
    def started(self, key: str, at: float) -> None: ...
    def finished(self, key: str, at: float) -> None: ...
    def retried(self) -> None: ...
    def depth(self, waiting: int) -> None: ...


class WorkQueueMetrics(NoQueueMetrics):
    def __init__(self, registry, name: str, clock=time.monotonic):
        labels = {"name": name}
        self.clock = clock
        self._started: dict = {}
        self._lock = threading.Lock()
        self._depth = Gauge("workqueue_depth", "Current depth of workqueue", ["name"], registry=registry)
        self._adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"], registry=registry
        )
        self._latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"],
            buckets=BUCKETS,
            registry=registry,
        )
        self._work = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            ["name"],
            buckets=BUCKETS,
            registry=registry,
        )
        self._retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            ["name"],
            registry=registry,
        )
        unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "Seconds of work in progress not yet observed by work_duration",
            ["name"],
            registry=registry,
        )
        longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            ["name"],
            registry=registry,
        )
        unfinished.labels(**labels).set_function(lambda: sum(self._running_for()))
        longest.labels(**labels).set_function(lambda: max(self._running_for(), default=0.0))
        self._labels = labels

    def _running_for(self) -> list:
        now = self.clock()
        with self._lock:
            return [now - at for at in self._started.values()]

    def added(self) -> None:
        self._adds.labels(**self._labels).inc()

    def handed_out(self, waited: float) -> None:
        self._latency.labels(**self._labels).observe(max(0.0, waited))

    def started(self, key: str, at: float) -> None:
        with self._lock:
            self._started[key] = at

    def finished(self, key: str, at: float) -> None:
        with self._lock:
            began = self._started.pop(key, None)
        if began is not None:
            self._work.labels(**self._labels).observe(max(0.0, at - began))

    def retried(self) -> None:
        self._retries.labels(**self._labels).inc()

    def depth(self, waiting: int) -> None:
        self._depth.labels(**self._labels).set(waiting)
