"""How long each Proxy went between two answered polls: the figure behind "no Proxy's poll later
than twice its interval".

The work queue's latency histogram (client-go's buckets, up to 10 s) says how long a due key
waited, not how long a Proxy went unobserved; a Proxy whose polls keep failing, or whose key
never came due, is invisible there. This records, per Proxy uid, when its last poll was answered
and observes the gap at the next one, labelled with the state the Proxy was in (a Running
Proxy's gap is its Running poll interval plus whatever delayed it).
"""

from __future__ import annotations

import threading
import time

from prometheus_client import Histogram

# Up to ten Running poll intervals of the default 60 s, with the 2x bound (120 s) among them.
BUCKETS = (1, 2, 5, 10, 30, 60, 75, 90, 120, 180, 300, 600)


class PollGaps:
    def __init__(self, registry):
        self._histogram = Histogram(
            "egress_proxies_poll_gap_seconds",
            "Seconds between two answered polls of one Proxy, by the state it was in.",
            ["state"],
            registry=registry,
            buckets=BUCKETS,
        )
        self._last: dict = {}  # uid -> monotonic time of its last answered poll
        self._lock = threading.Lock()

    def answered(self, uid: str, state: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            last = self._last.get(uid)
            self._last[uid] = now
        if last is not None:
            self._histogram.labels(state=state or "Unknown").observe(now - last)

    def forget(self, uid: str) -> None:
        """The Proxy is gone (or its instance is being replaced): its next poll starts afresh."""
        with self._lock:
            self._last.pop(uid, None)
