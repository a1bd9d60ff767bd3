# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Starting, recognising and stopping one instance's Squid process.

A pid alone proves nothing (pids are reused), so a process counts as an instance's Squid only
when its start time matches the one recorded when it was started and its command line names
the instance's own squid.conf. Squid runs in the foreground (``-N``) in its own session, so it
outlives the short module process that started it.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import signal
import subprocess
import time

PROCESS_RECORD = "process.json"
CONF = "squid.conf"

ALIVE = "alive"
SUSPENDED = "suspended"
DEAD = "dead"

# /proc/<pid>/stat state letters: running, sleeping, disk wait, idle are alive; stopped and
# traced will not recover by themselves; zombie and dead are gone.
_ALIVE_STATES = frozenset("RSDIW")
_SUSPENDED_STATES = frozenset("Tt")

_children = {}  # pid -> Popen, to reap Squid processes this process started


def service_name(instance_name: str) -> str:
    """Squid's ``-n`` name (it prefixes shared-memory segments) must be alphanumeric."""
    return "ep" + hashlib.sha256(instance_name.encode("utf-8")).hexdigest()[:20]


def _proc_stat(pid: int):
    """``(state, start_ticks)`` of ``pid`` or ``None``."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def _cmdline(pid: int) -> list:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [part.decode("utf-8", "replace") for part in handle.read().split(b"\0") if part]
    except OSError:
        return []


def read_record(instance_dir: str):
    try:
        with open(os.path.join(instance_dir, PROCESS_RECORD), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def status(instance_dir: str) -> tuple:
    """``(ALIVE|SUSPENDED|DEAD, pid)`` of the instance's own Squid."""
    record = read_record(instance_dir)
    if not record:
        return DEAD, 0
    pid = int(record.get("pid", 0))
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        _children.pop(pid, None)
        return DEAD, pid
    stat = _proc_stat(pid)
    if stat is None or stat[1] != record.get("startTicks"):
        return DEAD, pid
    if os.path.join(instance_dir, CONF) not in _cmdline(pid):
        return DEAD, pid
    if stat[0] in _ALIVE_STATES:
        return ALIVE, pid
    if stat[0] in _SUSPENDED_STATES:
        return SUSPENDED, pid
    return DEAD, pid


# What a Squid's environment holds: nothing of the process that started it. Squid outlives that
# process (a module run, a controller's runner run), so an inherited variable would outlive it
# too: a caller's credentials in a daemon's /proc/<pid>/environ, or the controller's run mark,
# by which the processes of a timed-out run are swept (a live proxy would be killed with them).
SQUID_ENVIRONMENT = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}


def start(squid_binary: str, instance_dir: str, instance_name: str) -> int:
    """Start Squid for the instance and record its identity; returns the pid."""
    conf = os.path.join(instance_dir, CONF)
    with open(os.path.join(instance_dir, "squid.out"), "ab") as out:
        child = subprocess.Popen(
            [squid_binary, "-N", "-f", conf, "-n", service_name(instance_name)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            close_fds=True,
            start_new_session=True,
            cwd=instance_dir,
            env=dict(SQUID_ENVIRONMENT),
        )
    _children[child.pid] = child
    # Popen can return while the kernel is still finishing the exec: /proc/<pid>/cmdline reads
    # empty for a moment, and status() would call the starting Squid dead (get: Stopped;
    # delete: nothing to stop, so Squid outlived its directory). Wait until it shows the conf.
    end = time.monotonic() + 2.0
    while conf not in _cmdline(child.pid) and child.poll() is None and time.monotonic() < end:
        time.sleep(0.005)
    stat = _proc_stat(child.pid)
    record = {"pid": child.pid, "startTicks": stat[1] if stat else None, "startedAt": time.time()}
    tmp = os.path.join(instance_dir, PROCESS_RECORD + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    os.rename(tmp, os.path.join(instance_dir, PROCESS_RECORD))
    return child.pid


def stop(instance_dir: str, instance_name: str, deadline, grace: float = 5.0) -> None:
    """Stop the instance's Squid (TERM, then KILL after ``grace``) and remove its shared memory."""
    state, pid = status(instance_dir)
    if state != DEAD:
        with contextlib.suppress(ProcessLookupError):
            if state == SUSPENDED:
                os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + deadline.budget(grace)
        while time.monotonic() < end and status(instance_dir)[0] != DEAD:
            time.sleep(0.05)
        if status(instance_dir)[0] != DEAD:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            end = time.monotonic() + 2.0
            while time.monotonic() < end and status(instance_dir)[0] != DEAD:
                time.sleep(0.02)
    child = _children.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=0.5)
    for segment in glob.glob("/dev/shm/%s-*" % service_name(instance_name)):
        with contextlib.suppress(OSError):
            os.unlink(segment)
