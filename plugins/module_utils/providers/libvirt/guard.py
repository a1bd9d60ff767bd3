# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Budgets for libvirt calls, and abandoning a call that overruns them.

libvirt-python calls block in C with no timeout of their own, so each one runs in a worker
thread while the caller waits for the smaller of its budget and the operation's deadline (and
wakes on cancellation). A call that overruns is abandoned: the caller gets ``CallAbandoned``
(Transient), the connection is retired so no new operation is handed it, and the worker is left
to finish or die with the process. Operations already using that connection, and every other
host's connection, carry on untouched: abandoning never closes a connection under another call.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import abandon
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.abandon import CallAbandoned
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.backend_spans import backend_call

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")


@dataclasses.dataclass(frozen=True)
class Budgets:
    """Seconds: the SSH + libvirt dial, one ordinary call, one upload/download chunk, HTTP reads."""

    dial: float = 20.0
    call: float = 30.0
    transfer: float = 60.0
    http: float = 30.0


# Connections with a call still running in a worker thread (abandoned ones included): closing
# a virConnect under a running call frees what that call still uses, and the process dies with
# a segmentation fault (seen in the fault matrix's libvirt cells). ``busy`` says which to leave.
_running: dict = {}
_running_lock = threading.Lock()


def busy(conn) -> bool:
    """Whether a call on ``conn`` (a seam connection) is still running, abandoned or not."""
    with _running_lock:
        return _running.get(id(conn), 0) > 0


def _tracked(conn, func):
    def call(*args):
        with _running_lock:
            _running[id(conn)] = _running.get(id(conn), 0) + 1
        try:
            return func(*args)
        finally:
            with _running_lock:
                left = _running[id(conn)] - 1
                if left:
                    _running[id(conn)] = left
                else:
                    del _running[id(conn)]

    return call


def run(func, args, seconds: float, deadline, what: str):
    """Run ``func(*args)`` in a worker thread; raise ``CallAbandoned`` if it overruns."""
    return abandon.run(func, args, seconds, deadline, what, thread_prefix="libvirt")


def _describe(args) -> str:
    """Identifiers only: XML documents and byte strings are summarised, never written out."""
    parts = []
    for arg in args:
        if isinstance(arg, str) and len(arg) <= 100 and "<" not in arg:
            parts.append(arg)
        elif isinstance(arg, (bytes, bytearray, memoryview)):
            parts.append("<%d bytes>" % len(arg))
        elif isinstance(arg, str):
            parts.append("<%d chars>" % len(arg))
        else:
            parts.append(repr(arg))
    return ",".join(parts)


def error_fields(span, exc: BaseException) -> None:
    """libvirt's error number and domain on a call's span (its text stays off: it can quote
    what the call was given)."""
    if isinstance(getattr(exc, "code", None), int):
        span.set_attribute("libvirt.error_code", exc.code)
        span.set_attribute("libvirt.error_domain", int(getattr(exc, "domain", 0) or 0))


class GuardedConnection:
    """A ``Connection`` whose every method runs under a budget, for one operation's deadline."""

    def __init__(self, conn, host: str, budgets: Budgets, deadline, on_abandon):
        self._conn = conn
        self._host = host
        self._budgets = budgets
        self._deadline = deadline
        self._on_abandon = on_abandon

    @property
    def raw(self):
        return self._conn

    def with_deadline(self, deadline) -> GuardedConnection:
        """The same connection under another deadline (cleanup after the operation's ran out)."""
        return GuardedConnection(self._conn, self._host, self._budgets, deadline, self._on_abandon)

    def call(self, method: str, *args, seconds: float | None = None):
        """One seam call, in its span ``libvirt.<method>`` (telemetry/backend_spans.py), which
        its log line is written inside of."""
        attributes = {"libvirt.host": self._host, "libvirt.rpc": method, "libvirt.args": _describe(args)}
        with backend_call("libvirt.%s" % method, attributes) as span:
            return self._call(span, method, args, seconds)

    def _call(self, span, method: str, args: tuple, seconds: float | None):
        func = _tracked(self._conn, getattr(self._conn, method))
        start = time.monotonic()
        what = "%s(%s) on %s" % (method, _describe(args), self._host)
        try:
            value = run(func, args, seconds or self._budgets.call, self._deadline, what)
        except CallAbandoned:
            span.set_attribute("libvirt.abandoned", True)
            log.warning("libvirt call abandoned host=%s method=%s", self._host, method)
            self._on_abandon(self._conn)
            raise
        except Exception as exc:
            error_fields(span, exc)
            log.debug(
                "libvirt call host=%s method=%s args=%s seconds=%.3f error_code=%s error=%s",
                self._host,
                method,
                _describe(args),
                time.monotonic() - start,
                getattr(exc, "code", ""),
                exc,
            )
            raise
        log.debug(
            "libvirt call host=%s method=%s args=%s seconds=%.3f ok",
            self._host,
            method,
            _describe(args),
            time.monotonic() - start,
        )
        if method == "volume_upload":
            return GuardedUpload(value, self, self._host)
        return value

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        getattr(self._conn, method)  # AttributeError for anything the seam does not have

        def bound(*args):
            return self.call(method, *args)

        return bound


class GuardedUpload:
    """The upload stream of a guarded connection: each chunk has the transfer budget."""

    def __init__(self, upload, guard: GuardedConnection, host: str):
        self._upload = upload
        self._guard = guard
        self._host = host

    def send(self, data: bytes) -> None:
        self._run("send", self._upload.send, (data,))

    def finish(self) -> None:
        self._run("finish", self._upload.finish, ())

    def abort(self) -> None:
        try:
            run(self._upload.abort, (), 5.0, Deadline.none(), "upload abort on %s" % self._host)
        except Exception as exc:  # best effort: the volume is deleted next anyway
            log.debug("libvirt upload abort host=%s failed: %s", self._host, exc)

    def _run(self, what, func, args):
        try:
            run(func, args, self._guard._budgets.transfer, self._guard._deadline, "upload %s" % what)
        except CallAbandoned:
            self._guard._on_abandon(self._guard.raw)
            raise
