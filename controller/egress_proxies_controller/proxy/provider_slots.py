"""Each provider's run slots, and the keys that wait for one.

A provider has ``runs_in_flight`` slots of its own, so a stuck backend holds only its own
Proxies. While a provider is busy, its new work waits (held, so never reconciled twice) for the
slot the next ending run hands over, for at most ``gather_while_busy`` seconds: one run then
carries all of it, where runs started as keys trickled in would each pay an ansible start-up
for a few. The state here is read and changed under the held keys' lock (``held.lock``), the
lock every holder of a key takes; the methods that say "caller holds the lock" need it held.
"""

from __future__ import annotations

import threading
import time

from .held_keys import HeldKeys


class ProviderSlots:
    def __init__(self, held: HeldKeys, runs_in_flight: int, batch_max: int, gather_while_busy: float):
        self.held, self.lock = held, held.lock
        self.runs_in_flight, self.batch_max = runs_in_flight, batch_max
        self.gather_while_busy = gather_while_busy
        self._slots = {}  # provider -> Semaphore(runs_in_flight)
        self._busy = {}  # provider -> its runs in flight
        self._waiting = {}  # provider -> keys (held) waiting for one of its run slots
        self._since = {}  # provider -> when its waiting list got its first key

    def of(self, provider: str) -> threading.Semaphore:
        """The provider's slots (made on its first run)."""
        return self._slots.setdefault(provider, threading.Semaphore(self.runs_in_flight))

    def waiting(self, provider: str) -> list:
        """The keys waiting for one of the provider's slots (a copy)."""
        with self.lock:
            return list(self._waiting.get(provider, ()))

    def any_waiting(self) -> bool:
        with self.lock:
            return bool(self._waiting)

    def should_gather(self, provider: str, arriving: int) -> bool:
        """Whether new work of a busy provider waits for a handed-over slot (caller holds the
        lock): not when enough waits already to fill a run."""
        if self.gather_while_busy <= 0 or not self._busy.get(provider):
            return False
        return len(self._waiting.get(provider, ())) + arriving < self.batch_max

    def wait(self, provider: str, keys: list) -> None:
        """Hold ``keys`` in the provider's waiting list (caller holds the lock)."""
        if provider not in self._waiting:
            self._since[provider] = time.monotonic()
        waiting = self._waiting.setdefault(provider, [])
        for key in keys:
            self.held.keys[key] = waiting
            waiting.append(key)

    def started(self, provider: str) -> None:
        """A run of the provider took a slot (caller holds the lock)."""
        self._busy[provider] = self._busy.get(provider, 0) + 1

    def ended(self, provider: str) -> None:
        with self.lock:
            self._busy[provider] -= 1

    def take_waiting(self, provider: str, slots: threading.Semaphore) -> list | None:
        """The provider's waiting keys, now off the list, for a run on ``slots``' slot (ours);
        with none waiting the slot is freed, under the lock: work arriving meanwhile either
        takes it or is handed it, never waits for a run that will not come."""
        with self.lock:
            self._since.pop(provider, None)
            waiting = self._waiting.pop(provider, None)
            if not waiting:
                slots.release()
            return waiting

    def overdue(self) -> list:
        """(provider, slots) for each provider whose keys waited ``gather_while_busy`` and
        that has a free slot, now taken (caller holds the lock): not flushed twice."""
        now, ready = time.monotonic(), []
        for provider, since in list(self._since.items()):
            if now - since < self.gather_while_busy:
                continue
            slots = self.of(provider)
            if slots.acquire(blocking=False):
                ready.append((provider, slots))
                del self._since[provider]
        return ready
