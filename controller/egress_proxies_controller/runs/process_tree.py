"""Every process of one ansible-runner run, found by a mark in its environment, and killed.

ansible-core's workers call ``setsid()``, so killing a run's process group (what ansible-runner
does on a timeout) leaves the module processes running: they would keep changing backends while
the controller already retries the same items. Each run is started with ``RUN_ENV=<run id>`` in
its environment, which every descendant inherits whatever session or group it moves to; after
the run (and whenever it must stop early) ``kill_run`` SIGKILLs every process still carrying the
mark, until none is left and every one it killed has finished exiting (a killed process tearing
down its memory, or one in the middle of an exec, shows no mark yet still runs). Only processes of
this user are visible to it, which is what we start. A run forked from the fork server has no exec
of its own to carry the mark: it writes it into its environment block instead (environ_mark),
which its workers inherit.
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


def kill_run(run_id: str, timeout: float = 10.0, quiet: float = 0.2) -> int:
    """SIGKILL every process of the run until none is left; returns how many were killed.

    An empty scan alone is no proof: a process tearing down its memory after SIGKILL has no
    environment block left yet still runs, and one in the middle of an exec has none yet. So the
    killed processes are waited for until each is dead or a zombie, and the scans must stay
    empty for ``quiet`` seconds."""
    killed: dict = {}  # pid -> its start time, so a reused pid is never waited for
    deadline = time.monotonic() + timeout
    quiet_since = None
    while True:
        pids = marked(run_id)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.setdefault(pid, _start_time(pid))
            except ProcessLookupError:
                pass
        exiting = [pid for pid, started in killed.items() if _still_running(pid, started)]
        now = time.monotonic()
        if pids or exiting:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= quiet:
            return len(killed)
        if now > deadline:
            raise RuntimeError("processes of run %s survive SIGKILL: %s" % (run_id, pids or exiting))
        time.sleep(0.05)


def _stat_fields(pid: int) -> list:
    """The fields of /proc/<pid>/stat after the command name ([] once the pid is gone)."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
            return handle.read().rpartition(")")[2].split()
    except OSError:
        return []


def _start_time(pid: int) -> str:
    fields = _stat_fields(pid)
    return fields[19] if len(fields) > 19 else ""  # field 22 of proc(5): starttime


def _still_running(pid: int, started: str) -> bool:
    """The same process (by its start time) neither gone nor a zombie: still exiting."""
    fields = _stat_fields(pid)
    return len(fields) > 19 and fields[19] == started and fields[0] not in ("Z", "X")
