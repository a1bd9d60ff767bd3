# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Running a blocking call that has no timeout of its own within a deadline, abandoning it.

libvirt-python calls block in C, and the kubernetes client runs a kubeconfig's exec credential
plugin as a subprocess without a timeout: each runs in a worker thread while the caller waits
for the smaller of its budget and the deadline (and wakes on cancellation). A call that
overruns is abandoned: the caller gets ``CallAbandoned`` (a ``DeadlineExceeded``, so
Transient everywhere) and the worker is left to finish or die with the process. The worker
runs in a copy of the caller's context, so a span the call opens, and every log line it writes,
belong to the caller's span (telemetry/backend_spans.py).
"""

from __future__ import annotations

import contextvars
import threading
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded

_WAIT_SLICE = 0.05


class CallAbandoned(DeadlineExceeded):
    """A call ran past its budget or deadline, or was cancelled, and was left behind."""


def run(func, args, seconds: float, deadline, what: str, thread_prefix: str = "bounded"):
    """``func(*args)`` in a worker thread; ``CallAbandoned`` if it overruns."""
    deadline.check(what)
    end = time.monotonic() + deadline.budget(seconds)
    box = {}
    done = threading.Event()

    def work():
        try:
            box["value"] = func(*args)
        except BaseException as exc:  # handed to the waiting caller
            box["error"] = exc
        finally:
            done.set()

    context = contextvars.copy_context()
    threading.Thread(
        target=context.run, args=(work,), name="%s %s" % (thread_prefix, what), daemon=True
    ).start()
    while not done.wait(max(0.0, min(_WAIT_SLICE, end - time.monotonic()))):
        if deadline.cancelled:
            raise CallAbandoned("%s abandoned: the operation was cancelled" % what)
        if time.monotonic() >= end:
            raise CallAbandoned("%s abandoned after %.1fs (budget or deadline)" % (what, seconds))
    if "error" in box:
        raise box["error"]
    return box.get("value")
