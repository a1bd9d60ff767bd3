"""Waiting for a daemon the tests started to answer: one place for the polls the libvirt
fixtures, the system-libvirtd fixture and the molecule hypervisor all use."""

from __future__ import annotations

import os
import socket
import time


def wait_for(predicate, seconds: float, what: str, log: str = "") -> None:
    """Poll ``predicate`` every 50 ms for ``seconds``; RuntimeError naming ``what`` (with the
    tail of ``log``, when given) if it never held."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    detail = ""
    if log and os.path.exists(log):
        with open(log, encoding="utf-8", errors="replace") as handle:
            detail = handle.read()[-3000:]
    raise RuntimeError("%s did not come up within %ss\n%s" % (what, seconds, detail))


def connectable_unix(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(path)
            return True
        except OSError:
            return False


def connectable_tcp(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
