"""Provider calls made during a scenario, each bounded in time and recorded with its outcome,
so the invariants can judge every answer afterwards (a NotFound against the backend's truth, a
Permanent error given for a transient fault, a call that overran its deadline)."""

from __future__ import annotations

import dataclasses
import threading
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline

#: seconds past its deadline a call may take before it counts as hung (thread start-up, close)
OVERRUN_GRACE = 10.0


@dataclasses.dataclass
class Call:
    op: str
    target: str  # provider id or uid the call was about
    outcome: str  # "ok" or an error class, "hung" when it did not return in time
    seconds: float
    text: str  # the result or the error, as text (for the secret check)
    present_after: bool | None = None  # for NotFound answers: was it on the backend after all?


class CallLog:
    def __init__(self, deadline_seconds: float):
        self.deadline_seconds = deadline_seconds
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    def call(self, op: str, target: str, func, *args):
        """Run ``func(*args, deadline)``; never raises, returns the result or None."""
        box = {}

        def work():
            try:
                box["result"] = func(*args, Deadline(self.deadline_seconds))
            except Exception as exc:  # judged by the invariants
                box["error"] = exc

        start = time.monotonic()
        thread = threading.Thread(target=work, daemon=True, name="fault-call-" + op)
        thread.start()
        thread.join(self.deadline_seconds + OVERRUN_GRACE)
        seconds = time.monotonic() - start
        if thread.is_alive():
            self._append(Call(op, target, "hung", seconds, ""))
            return None
        if "error" in box:
            exc = box["error"]
            text = "%s: %s %r" % (type(exc).__name__, exc, getattr(exc, "__cause__", None))
            self._append(Call(op, target, errors.class_of(exc), seconds, text))
            return None
        self._append(Call(op, target, "ok", seconds, repr(box.get("result"))))
        return box.get("result")

    def _append(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def call_all(self, calls: list) -> list:
        """``call`` each ``(op, target, func, *args)`` at once (the fault phase costs one deadline,
        not one per call); returns the results in order."""
        box = [None] * len(calls)

        def one(index, item):
            box[index] = self.call(*item)

        threads = [threading.Thread(target=one, args=(i, c), daemon=True) for i, c in enumerate(calls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return box

    def outcomes(self) -> list:
        return ["%s(%s)=%s" % (c.op, c.target[-12:], c.outcome) for c in self.calls]
