"""Every process of one ansible-runner run, found by a mark in its environment, and killed.

ansible-core's workers call ``setsid()``, so killing a run's process group (what ansible-runner
does on a timeout) leaves the module processes running: they would keep changing backends while
the controller already retries the same items. Each run is started with ``RUN_ENV=<run id>`` in
its environment, which every descendant inherits whatever session or group it moves to; after
the run (and whenever it must stop early) ``kill_run`` SIGKILLs every process still carrying the
mark, until none is left. Only processes of this user are visible to it, which is what we start.
A run forked from the fork server has no exec of its own to carry the mark: it writes it into its
environment block instead (environ_mark), which its workers inherit.
"""

from __future__ import annotations

import os
import signal
import time

RUN_ENV = "EGRESS_PROXIES_RUN"


def marked(run_id: str) -> list:
    """Pids of live processes whose environment carries ``RUN_ENV=run_id`` (zombies have none)."""
    needle = b"\0" + ("%s=%s" % (RUN_ENV, run_id)).encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as handle:
                environ = b"\0" + handle.read() + b"\0"
        except OSError:
            continue
        if needle in environ:
            found.append(int(name))
    return found


def kill_run(run_id: str, timeout: float = 10.0) -> int:
    """SIGKILL every process of the run until none is alive; returns how many were killed."""
    killed = set()
    deadline = time.monotonic() + timeout
    while True:
        pids = marked(run_id)
        if not pids:
            return len(killed)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise RuntimeError("processes of run %s survive SIGKILL: %s" % (run_id, pids))
        time.sleep(0.05)
