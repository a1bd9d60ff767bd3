# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""One pooled connection per host, dialled lazily and reused for the whole module run.

A batched run of many instances on one host therefore makes one SSH dial, not one per
instance. Dialling happens under a per-host lock that waiters leave when their own deadline
ends. A connection that is found dead, or whose call was abandoned, is retired: the next
operation dials afresh, while operations still holding the old one finish on it. Retired
connections are closed by ``close()`` at the end of the run (never under a running call).
The health check never comes here: it dials its own connections (check.py).
"""

from __future__ import annotations

import logging
import threading
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import (
    Deadline,
    DeadlineExceeded,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import guard
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.backend_spans import backend_call

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")


class _Entry:
    def __init__(self):
        self.lock = threading.Lock()
        self.conn = None


class HostTable:
    def __init__(self, dialer, budgets: guard.Budgets, provider_name: str):
        self._dialer = dialer
        self._budgets = budgets
        self._provider_name = provider_name
        self._entries = {}
        self._entries_lock = threading.Lock()
        self._retired = []
        self.dials = 0

    def _entry(self, host_name: str) -> _Entry:
        with self._entries_lock:
            return self._entries.setdefault(host_name, _Entry())

    def get(self, host, deadline) -> guard.GuardedConnection:
        """The pooled connection to ``host`` (a HostSpec), dialled if needed, guarded for ``deadline``."""
        entry = self._entry(host.name)
        wait = deadline.budget(self._budgets.dial)
        if not entry.lock.acquire(timeout=wait):
            deadline.check("connect to %s" % host.name)
            raise DeadlineExceeded("waited %.1fs for the connection to %s" % (wait, host.name))
        try:
            if entry.conn is not None and not entry.conn.is_alive():
                log.info(
                    "provider=%s libvirt connection to host=%s is dead, redialling",
                    self._provider_name,
                    host.name,
                )
                self._retire(entry.conn)
                entry.conn = None
            if entry.conn is None:
                self.dials += 1
                entry.conn = self.dial(host, deadline)
            conn = entry.conn
        finally:
            entry.lock.release()
        return guard.GuardedConnection(
            conn, host.name, self._budgets, deadline, lambda c: self.abandoned(host.name, c)
        )

    def dial(self, host, deadline):
        """A new connection (also used by the check, which never pools it)."""
        start = time.monotonic()
        attributes = {"libvirt.host": host.name, "libvirt.address": host.address, "libvirt.user": host.user}
        with backend_call("libvirt.dial", attributes) as span:
            try:
                conn = self._dial(host, deadline, start)
            except Exception as exc:
                guard.error_fields(span, exc)
                raise
            span.set_attribute("libvirt.transport", getattr(conn, "transport", ""))
            return conn

    def _dial(self, host, deadline, start: float):
        try:
            conn = guard.run(self._dialer.dial, (host,), self._budgets.dial, deadline, "dial %s" % host.name)
        except Exception as exc:
            log.info(
                "provider=%s libvirt host connect failed host=%s address=%s seconds=%.3f error=%s",
                self._provider_name,
                host.name,
                host.address,
                time.monotonic() - start,
                exc,
            )
            raise
        log.info(
            "provider=%s libvirt host connected host=%s address=%s user=%s seconds=%.3f",
            self._provider_name,
            host.name,
            host.address,
            host.user,
            time.monotonic() - start,
        )
        return conn

    def abandoned(self, host_name: str, conn) -> None:
        entry = self._entry(host_name)
        with self._entries_lock:  # not entry.lock: a dial in progress must not delay the caller
            if entry.conn is conn:
                entry.conn = None
                self._retired.append(conn)

    def _retire(self, conn) -> None:
        with self._entries_lock:
            self._retired.append(conn)

    def close(self) -> None:
        with self._entries_lock:
            conns = [e.conn for e in self._entries.values() if e.conn is not None] + self._retired
            for entry in self._entries.values():
                entry.conn = None
            self._retired = []
        for conn in conns:
            if guard.busy(conn):  # an abandoned call still runs on it: closing it would crash
                log.debug(
                    "provider=%s left a libvirt connection open: a call still runs on it", self._provider_name
                )
                continue
            try:
                guard.run(conn.close, (), 5.0, Deadline.none(), "close")
            except Exception as exc:  # a connection stuck in an abandoned call stays behind
                log.debug("provider=%s closing a libvirt connection failed: %s", self._provider_name, exc)
