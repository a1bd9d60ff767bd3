"""Events sent off the reconcile's path, the way client-go's EventRecorder sends them.

A reconcile records an Event and goes on: the POST (or the aggregated count's PATCH,
kube/events.py) is made by a sender thread. Each object's Events go through one sender, picked
by the object's uid, so they reach the API server in the order they were recorded; the senders
work on different objects at once. An Event is best effort, as in client-go: a full queue drops
the new Event (counted, and said once per ``DROP_LOG_INTERVAL``) rather than hold a reconcile,
and ``close`` sends what is queued for at most its timeout.

Why: on a burst of 1000 Proxies each reconcile that recorded an Event waited for its POST
(~40 ms on a loaded API server) before the next key's status could be written, which halved how
fast Proxies were marked Provisioning and Ready (docs/performance.md, issue 38).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import zlib

log = logging.getLogger("egress_proxies_controller.kube.events")

QUEUE_SIZE = 1000  # Events waiting per sender (client-go's broadcaster queues 1000 too)
DROP_LOG_INTERVAL = 60.0


class EventRecorder:
    def __init__(self, send, senders: int = 2, size: int = QUEUE_SIZE):
        """``send(obj, event_type, reason, message, component, **kinds)``: the synchronous
        recording (``Kube.event``); ``senders``: threads sending at once."""
        self.send = send
        self._queues = [queue.Queue(size) for _sender in range(max(1, senders))]
        self._dropped = 0
        self._said_at = float("-inf")
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._sender, args=(q,), name="event-sender-%d" % i, daemon=True)
            for i, q in enumerate(self._queues)
        ]
        for thread in self._threads:
            thread.start()

    def event(self, obj: dict, event_type: str, reason: str, message: str, component: str, **kinds) -> None:
        """Queue one Event on ``obj``; never blocks."""
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        sender = self._queues[zlib.crc32(uid.encode()) % len(self._queues)]
        try:
            sender.put_nowait((obj, event_type, reason, message, component, kinds))
        except queue.Full:
            self._drop(reason)

    def _drop(self, reason: str) -> None:
        with self._lock:
            self._dropped += 1
            now = time.monotonic()
            if now - self._said_at < DROP_LOG_INTERVAL:
                return
            self._said_at, dropped = now, self._dropped
        log.warning("event %s dropped: the Event queue is full (%d dropped so far)", reason, dropped)

    @property
    def dropped(self) -> int:
        with self._lock:
            return self._dropped

    def _sender(self, waiting: queue.Queue) -> None:
        while True:
            item = waiting.get()
            try:
                if item is None:
                    return
                obj, event_type, reason, message, component, kinds = item
                self.send(obj, event_type, reason, message, component, **kinds)  # logs its own failure
            except Exception:  # a sender never dies of one Event
                log.exception("event not recorded")
            finally:
                waiting.task_done()

    def pending(self) -> int:
        """Events queued and not yet sent."""
        return sum(q.unfinished_tasks for q in self._queues)

    def close(self, timeout: float = 10.0) -> bool:
        """Send what is queued (for at most ``timeout`` s) and stop; False when some were left."""
        end = time.monotonic() + timeout
        for waiting in self._queues:
            try:
                waiting.put(None, timeout=max(0.0, end - time.monotonic()))
            except queue.Full:
                pass
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)
