"""Events aggregated the way client-go's EventCorrelator does it, so a Proxy failing every poll
leaves one Event with a growing count instead of thousands of objects in etcd.

An Event is keyed by what makes it the same event: the involved object (kind, namespace, name,
uid), type, reason, message and reporting component. A repeat within ``window`` seconds patches
the recorded Event's ``count`` and ``lastTimestamp``; a repeat after that, or one whose Event
was deleted meanwhile (404: the API server's Event TTL, a user), creates a new one. The memory
of recorded Events is bounded (least recently used first out), as client-go's cache is.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time

WINDOW_SECONDS = 600.0  # client-go's default aggregation interval
CACHE_SIZE = 4096


@dataclasses.dataclass
class Recorded:
    name: str
    namespace: str
    count: int
    at: float


class EventCorrelator:
    def __init__(self, window: float = WINDOW_SECONDS, size: int = CACHE_SIZE, clock=time.monotonic):
        self.window = window
        self.size = size
        self.clock = clock
        self._seen: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def repeat_of(self, key: tuple) -> Recorded | None:
        """The Event to count this one into, or None when a new Event must be created."""
        with self._lock:
            recorded = self._seen.get(key)
            if recorded is None or self.clock() - recorded.at > self.window:
                return None
            self._seen.move_to_end(key)
            return recorded

    def recorded(self, key: tuple, name: str, namespace: str, count: int) -> None:
        with self._lock:
            self._seen[key] = Recorded(name, namespace, count, self.clock())
            self._seen.move_to_end(key)
            while len(self._seen) > self.size:
                self._seen.popitem(last=False)

    def forget(self, key: tuple) -> None:
        with self._lock:
            self._seen.pop(key, None)


def event_key(involved: dict, event_type: str, reason: str, message: str, component: str) -> tuple:
    return (
        involved.get("kind"),
        involved.get("namespace"),
        involved.get("name"),
        involved.get("uid"),
        event_type,
        reason,
        message,
        component,
    )
