"""A periodic loop with jitter that stops promptly: the shape of GC, health checks and probes."""

from __future__ import annotations

import logging
import random
import threading

from ..kube import errors

log = logging.getLogger("egress_proxies_controller.loops.periodic")


class PeriodicLoop:
    """Calls ``round()`` every ``interval`` seconds (+/- ``jitter`` fraction) until stopped.

    A round that raises is logged and the loop goes on: one bad round never ends a loop.
    """

    name = "loop"
    gate = None  # a callable: when set, a round runs only while it returns True (--shards)

    def __init__(self, interval: float, jitter: float = 0.0, initial_delay: float = 0.0):
        self.interval = interval
        self.jitter = jitter
        self.initial_delay = initial_delay
        self.stop_event = threading.Event()
        self.rounds = 0
        self._thread = None

    def round(self) -> None:
        raise NotImplementedError

    def _delay(self) -> float:
        spread = self.interval * self.jitter
        return max(0.0, self.interval + random.uniform(-spread, spread))  # jitter, not crypto

    def _run(self) -> None:
        if self.stop_event.wait(self.initial_delay):
            return
        while not self.stop_event.is_set():
            try:
                if self.gate is None or self.gate():
                    self.round()
            except Exception as exc:
                errors.log_failure(log, "%s round failed" % self.name, exc)
            self.rounds += 1
            if self.stop_event.wait(self._delay()):
                return

    def start(self) -> PeriodicLoop:
        if self.interval > 0:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout)
