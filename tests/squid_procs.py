"""Squid processes of a test's state directory, found in ``/proc`` by their command line.

Shared by the provider harness and the module tests. A Squid is this state directory's when it
was started with ``-f <stateDir>/instances/<name>/squid.conf``; that holds with or without its
``process.json``, so what a crash leaves is found too (issue 28). Processes are stopped by pid.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time


def _argv_and_state(pid: str):
    with open("/proc/%s/cmdline" % pid, "rb") as handle:
        argv = [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
    with open("/proc/%s/stat" % pid, encoding="utf-8") as handle:
        state = handle.read().rsplit(")", 1)[1].split()[0]
    return argv, state


def squid_pids(instances_dir, conf_path: str | None = None) -> list:
    """Live (not zombie) pids started with a squid.conf under ``instances_dir`` (or exactly
    ``conf_path``)."""
    prefix = str(instances_dir) + os.sep
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv, state = _argv_and_state(entry)
        except (OSError, IndexError):
            continue
        confs = [value for arg, value in itertools.pairwise(argv) if arg == "-f"]
        if conf_path is not None:
            mine = conf_path in confs
        else:
            mine = any(c.startswith(prefix) and c.endswith(os.sep + "squid.conf") for c in confs)
        if mine and state not in "ZX":
            pids.append(int(entry))
    return sorted(pids)


def kill_all(instances_dir) -> list:
    """SIGKILL, by pid, every Squid a failing test left under ``instances_dir``; returns them."""
    pids = squid_pids(instances_dir)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    end = time.monotonic() + 5
    while squid_pids(instances_dir) and time.monotonic() < end:
        time.sleep(0.05)
    return pids
