"""What a crashed test session left behind, found and removed by the next one.

Each test hypervisor lives in a directory of its own (``/tmp/egress-libvirt-*`` for the
fixtures' and benchmarks', ``/tmp/egress-molecule-*`` for the molecule scenarios') holding an
``owner.pid``; its daemons, guests and sshd all name that directory on their command line. A
directory whose owner is gone belongs to a session that crashed: the processes naming it are
stopped by their pid (they live in a private mount namespace, so nothing else would ever stop
them) and the directory is removed. Called under the machine-wide lock (machine_lock.py).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import sys
import time

from contract import pids

PREFIXES = ("/tmp/egress-libvirt-", "/tmp/egress-molecule-")
OWNER_FILE = "owner.pid"


def mark_owner(directory: str, pid: int | None = None) -> None:
    with open(os.path.join(directory, OWNER_FILE), "w", encoding="utf-8") as handle:
        handle.write(str(pid or os.getpid()))


def _owner_alive(directory: str) -> bool:
    try:
        with open(os.path.join(directory, OWNER_FILE), encoding="utf-8") as handle:
            pid = int(handle.read().strip() or 0)
    except (OSError, ValueError):
        # A directory being set up right now has no owner file yet; one older than a minute
        # without it was left by a crash.
        with contextlib.suppress(OSError):
            return time.time() - os.stat(directory).st_mtime < 60
        return False
    return pid > 0 and pids.running(pid)


def _command_lines():
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError), open("/proc/%s/cmdline" % entry, "rb") as handle:
            yield int(entry), handle.read().replace(b"\0", b" ").decode("utf-8", "replace")


def remove_crashed_sessions() -> None:
    dead = [d for prefix in PREFIXES for d in glob.glob(prefix + "*") if not _owner_alive(d)]
    if not dead:
        return
    stopped = []
    for pid, command in _command_lines():
        if any(d + "/" in command or command.rstrip().endswith(d) for d in dead):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                stopped.append(pid)
    end = time.monotonic() + 10
    while stopped and time.monotonic() < end and any(pids.running(pid) for pid in stopped):
        time.sleep(0.1)
    for directory in dead:
        shutil.rmtree(directory, ignore_errors=True)
    print(
        "test hypervisor: removed what crashed sessions left: %d processes, %s"
        % (len(stopped), ", ".join(dead)),
        file=sys.stderr,
        flush=True,
    )
