"""When each Proxy of a namespace first became Ready, seen through a watch (issue 38).

Polling a list once a second rounds every Ready up to the next poll and lists 1000 objects a
second beside the run being measured; a watch delivers each status write as it happens, so the
time recorded is the time the API server told a client, the moment a user's ``kubectl get -w``
would see it. The controller and the floor (bench/burst_floor.py) are measured by this same
watch, so their figures compare.
"""

from __future__ import annotations

import threading
import time

from controller.e2e_lib import is_ready
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

GROUP, VERSION, PLURAL = "crawl.example.com", "v1alpha1", "proxies"
GONE = 410  # the watch's resourceVersion is too old: list again


class ReadyWatch:
    """Started before the burst's first create; ``ready_at`` maps each Proxy's name to the
    monotonic time its first Ready=True event arrived."""

    def __init__(self, custom, namespace: str, window: int = 10):
        self.custom, self.namespace, self.window = custom, namespace, window
        self.ready_at: dict = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._version = self._relist()
        self._thread = threading.Thread(target=self._run, name="ready-watch", daemon=True)
        self._thread.start()

    def count(self) -> int:
        with self._lock:
            return len(self.ready_at)

    def snapshot(self) -> dict:
        with self._lock:
            return dict(self.ready_at)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=self.window + 15)

    def _seen(self, obj: dict, now: float) -> None:
        if is_ready(obj):
            with self._lock:
                self.ready_at.setdefault(obj["metadata"]["name"], now)

    def _relist(self) -> str:
        """A list (at the start, and when the watch's version expired): Ready ones not yet seen
        are stamped now, the most the bench can know of them."""
        listing = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL)
        now = time.monotonic()
        for obj in listing["items"]:
            self._seen(obj, now)
        return listing["metadata"]["resourceVersion"]

    def _run(self) -> None:
        while not self._stopping.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(
                    self.custom.list_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    self.namespace,
                    PLURAL,
                    resource_version=self._version,
                    timeout_seconds=self.window,
                    allow_watch_bookmarks=True,
                ):
                    now = time.monotonic()
                    obj = event["object"]
                    self._version = obj["metadata"].get("resourceVersion", self._version)
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._seen(obj, now)
                    if self._stopping.is_set():
                        stream.stop()
            except ApiException as exc:
                if exc.status != GONE:
                    self._failed(exc)
                self._version = self._relist()
            except Exception as exc:  # a dropped connection: the figures must not stop silently
                self._failed(exc)
                self._version = self._relist()

    @staticmethod
    def _failed(exc: Exception) -> None:
        print("  ready watch: %s; listing again" % str(exc).splitlines()[0], flush=True)
        time.sleep(1.0)
