"""Processes the tests started, found and stopped by their pid (never by name)."""

from __future__ import annotations

import contextlib
import os
import signal
import time


def read_pid(path: str) -> int:
    """The pid in a daemon's pid file, 0 when there is none (yet)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def running(pid: int) -> bool:
    """Alive and not a zombie (a daemon is not our child, so /proc tells)."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop(pid: int, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``grace``."""
    if pid <= 0:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end and running(pid):
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
