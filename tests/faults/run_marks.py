"""Which processes belong to a controller's runs, as its process_tree decides: those whose
environment block carries a run's mark (``EGRESS_PROXIES_RUN=<run id>``) and this controller's
TMPDIR, Squids excepted (a proxy outlives its run by design). The fork server carries a
placeholder where a run id would be: it belongs to no run, and ``fork_servers`` finds it."""

from __future__ import annotations

import os
import re

RUN_MARK = re.compile(rb"(?:^|\0)EGRESS_PROXIES_RUN=([0-9a-f]{32})(?:\0|$)")
FORK_SERVER = b"egress_proxies_controller.runs.fork_server"


def _processes(workdir: str):
    """(pid, environ, cmdline) of every live process started with this controller's TMPDIR."""
    tmpdir = ("TMPDIR=" + os.path.join(workdir, "tmp")).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as handle:
                environ = handle.read()
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if tmpdir in environ.split(b"\0"):
            yield int(entry), environ, cmdline


def run_pids(workdir: str) -> list:
    """Live processes of the controller's runs (forked from its fork server or not)."""
    return list(run_ids(workdir))


def run_ids(workdir: str) -> dict:
    """The run id of each live process of the controller's runs, by pid."""
    found = {}
    for pid, env, cmd in _processes(workdir):
        mark = RUN_MARK.search(env)
        if mark and b"squid" not in cmd:
            found[pid] = mark.group(1).decode()
    return found


def fork_servers(workdir: str) -> list:
    """The controller's live fork servers (one while it runs; none once it has stopped)."""
    return [pid for pid, env, cmd in _processes(workdir) if FORK_SERVER in cmd and not RUN_MARK.search(env)]
