# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Deadlines and cancellation: the Python stand-in for Go's ``ctx``.

Every provider method takes a ``Deadline``. Backend calls derive their socket and SDK timeouts
from ``remaining()`` (capped by a per-call budget with ``budget()``), check ``cancelled`` between
steps, and a caller can ``cancel()`` a whole batch at once. ``child()`` gives a shorter deadline
that is still cancelled with its parent, so a per-item budget never outlives the run.
"""

from __future__ import annotations

import threading
import time


class DeadlineExceeded(Exception):
    """The deadline passed or the work was cancelled; providers classify it Transient."""


class Deadline:
    """An absolute monotonic deadline plus a cancellation flag shared with its children."""

    def __init__(self, seconds: float | None = None, _parent: Deadline | None = None):
        now = time.monotonic()
        self._at = None if seconds is None else now + max(0.0, float(seconds))
        self._parent = _parent
        self._cancelled = threading.Event()
        if _parent is not None and _parent._at is not None:
            self._at = _parent._at if self._at is None else min(self._at, _parent._at)

    @classmethod
    def none(cls) -> Deadline:
        """No time limit (cancellation still works)."""
        return cls(None)

    def child(self, seconds: float | None = None) -> Deadline:
        return Deadline(seconds, _parent=self)

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        if self._cancelled.is_set():
            return True
        return self._parent.cancelled if self._parent is not None else False

    def remaining(self) -> float | None:
        """Seconds left, ``None`` for no limit, never negative."""
        if self._at is None:
            return None
        return max(0.0, self._at - time.monotonic())

    def expired(self) -> bool:
        if self.cancelled:
            return True
        left = self.remaining()
        return left is not None and left <= 0.0

    def budget(self, seconds: float) -> float:
        """A timeout for one backend call: ``seconds``, or less if the deadline is nearer."""
        left = self.remaining()
        return float(seconds) if left is None else max(0.001, min(float(seconds), left))

    def check(self, what: str = "operation") -> None:
        """Raise ``DeadlineExceeded`` when the deadline passed or the work was cancelled."""
        if self.cancelled:
            raise DeadlineExceeded("%s cancelled" % what)
        left = self.remaining()
        if left is not None and left <= 0.0:
            raise DeadlineExceeded("%s ran past its deadline" % what)

    def sleep(self, seconds: float) -> None:
        """Sleep up to ``seconds``, waking early on cancellation; raises when time is up."""
        end = time.monotonic() + seconds
        while True:
            self.check("wait")
            left = end - time.monotonic()
            limit = self.remaining()
            if limit is not None:
                left = min(left, limit)
            if left <= 0:
                break
            self._cancelled.wait(min(left, 0.05))
