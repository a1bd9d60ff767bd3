# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""``follow``: the instances a batch left starting are read again until they run, in the same run.

Why: the controller's Proxy is Ready only once its instance is Running. Without this, a create
answers "Provisioning" and the Proxy waits for a poll, which is another ansible run (a runner
start-up, a module process, a list), and in a burst those polls queue behind the creates, so
Ready comes in a lump at the end. Here the module that made the instance already holds the
provider's client and connections: it reads each starting instance again (a bounded number a
round: see ``Follower``) and answers the item as soon as its state is no longer Provisioning,
or when the window ends with the last state read, so each Proxy is answered Running as its own
instance comes up.

Unlike ``wait``, following never holds one of the batch's ``concurrency`` slots (a follower
reads for all items, with a pool of its own), and the end of the window is not a failure: the
item's answer is simply the last state read (the controller polls it later as usual). A read that
fails leaves the item's last answer as it was: this is an early look, never a verdict.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline

FIELD = "follow"
PERIOD_SECONDS = 1.0  # before an instance's first read again (the wait option's interval)
REREAD_SECONDS = 2.0  # between two later reads of one starting instance
MIN_READS = 4  # reads a round may make even when the last round found nothing running
READ_SECONDS = 10.0  # at most, for one read: a slow read only delays that item's next look
MAX_SECONDS = 600.0


def problem(value) -> str:
    """Why ``value`` cannot be the window (empty: it can): 0 (off) to MAX_SECONDS seconds."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "%s: %r is not a number of seconds" % (FIELD, value)
    if not 0 <= float(value) <= MAX_SECONDS:
        return "%s: %s must be from 0 (off) to %d seconds" % (FIELD, value, MAX_SECONDS)
    return ""


def starting(result: dict) -> bool:
    """Whether a present item's result is one to follow: an instance answered and still starting."""
    return (
        not result.get("failed") and result.get("state") == contract.PROVISIONING and bool(result.get("id"))
    )


@dataclasses.dataclass
class _Followed:
    """One followed item: its provider, its latest result, when its window ends, its next read."""

    provider: str
    result: dict
    until: float
    next_read: float


class Follower:
    """Reads the followed instances on its own thread until each runs, stops, or its ``window``
    (from when its item finished) ends; ``on_done(index, result)`` hears each item's final
    result once.

    What it reads is bounded, so a backend with a backlog is not asked again and again about
    instances it has not got to: an item still starting is read again after 1, then every 2
    seconds, the oldest first; a round starts at most once a second and reads at most
    twice as many as the last round found running, plus a few (``concurrency`` at first)."""

    def __init__(self, provider_of, window: float, on_done, concurrency: int):
        self.provider_of, self.window, self.on_done = provider_of, float(window), on_done
        self._lock = threading.Condition()
        self._items: dict = {}  # index -> _Followed, oldest first
        self._done: dict = {}  # index -> the final result
        self._closing = False
        self._budget = max(MIN_READS, concurrency)  # reads the next round may make
        self._next_round = 0.0  # when the next round may start (monotonic)
        self._reads = concurrent.futures.ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="follow")
        self._thread = threading.Thread(target=self._loop, name="follower", daemon=True)
        self._thread.start()

    def take(self, index: int, provider: str, result: dict) -> bool:
        """Follow the item when its result says it is starting; False: it is final as it is."""
        if not starting(result):
            return False
        now = time.monotonic()
        with self._lock:
            self._items[index] = _Followed(provider, result, now + self.window, now + PERIOD_SECONDS)
            self._lock.notify_all()
        return True

    def finish(self, results: list) -> list:
        """After every item finished: wait until each followed one is settled; ``results``
        with the followed items' final results in their places."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        self._thread.join()
        self._reads.shutdown(wait=True)
        return [self._done.get(i, r) for i, r in enumerate(results)]

    def _loop(self) -> None:
        while True:
            with self._lock:
                due, ended = self._wait_for_due()
            for index, entry in ended.items():
                self._settle(index, entry.result)  # its window ended before its next read
            if due is None:
                return
            if not due:
                continue
            reads = {i: self._reads.submit(self._read, entry) for i, entry in due.items()}
            found = 0
            for index, future in reads.items():
                entry = due[index]
                result = future.result() or entry.result
                if result.get("state") != contract.PROVISIONING:
                    found += 1
                    self._settle(index, result)
                elif time.monotonic() >= entry.until:
                    self._settle(index, result)
                else:
                    with self._lock:
                        entry.result, entry.next_read = result, time.monotonic() + REREAD_SECONDS
            self._budget = 2 * found + MIN_READS

    def _wait_for_due(self) -> tuple:
        """(lock held) ``(due, ended)``: up to the budget of the items due for a read, oldest
        first, and the items whose window ended (taken out: their last result stands); ``due``
        is None when nothing is left to follow and every item of the batch has finished."""
        while True:
            now = time.monotonic()
            ended = {i: e for i, e in self._items.items() if e.until <= now}
            for index in ended:
                del self._items[index]
            if not self._items:
                if self._closing or ended:
                    return (None if self._closing else {}), ended
                self._lock.wait()
                continue
            due = []
            if now >= self._next_round:
                due = [(i, e) for i, e in self._items.items() if e.next_read <= now][: self._budget]
            if due or ended:
                if due:
                    self._next_round = now + PERIOD_SECONDS  # at most a round a second
                return dict(due), ended
            wake = min(min(max(e.next_read, self._next_round), e.until) for e in self._items.values())
            self._lock.wait(max(0.0, wake - now))

    def _read(self, entry: _Followed) -> dict | None:
        """The item's result as one read sees it now, or None when the read failed."""
        seconds = max(0.1, min(READ_SECONDS, entry.until - time.monotonic()))
        try:
            instance = self.provider_of(entry.provider).get(entry.result["id"], Deadline(seconds))
        except Exception:  # an early look only: any failure keeps the last answer
            return None
        answered = instance.as_dict(entry.provider)
        answered.update(changed=entry.result.get("changed", False), failed=False)
        return answered

    def _settle(self, index: int, result: dict) -> None:
        with self._lock:
            self._items.pop(index, None)
            self._done[index] = result
        self.on_done(index, result)
