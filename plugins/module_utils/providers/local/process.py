# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Starting, recognising and stopping one instance's Squid process.

A pid alone proves nothing (pids are reused), so a process counts as an instance's Squid only
when its start time matches the one recorded when it was started and its command line names
the instance's own squid.conf. Squid runs in the foreground (``-N``) in its own session, so it
outlives the short module process that started it.

``process.json`` is only a fast path. A crash (SIGKILL, a full disk) between starting Squid and
writing it leaves a Squid with no record (issue 28), so a Squid is also found by what survives
any crash: its command line, which names the instance's own squid.conf after ``-f``
(``find``). ``status`` falls back to that, ``stop`` stops every one it finds and fails while one
survives, and a failed ``start`` stops the Squid it started before raising.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import itertools
import json
import os
import signal
import subprocess
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import safe_files
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.backend_spans import backend_call

PROCESS_RECORD = "process.json"
CONF = "squid.conf"
OUTPUT = "squid.out"

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
        with safe_files.opened_dir(instance_dir) as fd:
            return json.loads(safe_files.read_text(fd, PROCESS_RECORD))
    except (OSError, ValueError):
        return None


def _names_conf(argv: list, conf: str) -> bool:
    """Whether a command line is a Squid started with ``-f conf``."""
    return any(arg == "-f" and value == conf for arg, value in itertools.pairwise(argv))


def find(instance_dir: str) -> list:
    """Pids of every live process started with this instance's squid.conf (``-f``), found in
    ``/proc``: what is left of its Squid whatever happened to ``process.json``."""
    conf = os.path.join(instance_dir, CONF)
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _names_conf(_cmdline(int(entry)), conf):
            stat = _proc_stat(int(entry))
            if stat is not None and stat[0] not in "ZX":
                pids.append(int(entry))
    return sorted(pids)


def _state(pid: int) -> str:
    stat = _proc_stat(pid)
    if stat is None:
        return DEAD
    if stat[0] in _ALIVE_STATES:
        return ALIVE
    if stat[0] in _SUSPENDED_STATES:
        return SUSPENDED
    return DEAD


def _recorded(instance_dir: str) -> tuple:
    """``(state, pid)`` from ``process.json`` alone, checked against ``/proc``."""
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
    if not _names_conf(_cmdline(pid), os.path.join(instance_dir, CONF)):
        return DEAD, pid
    return _state(pid), pid


def status(instance_dir: str) -> tuple:
    """``(ALIVE|SUSPENDED|DEAD, pid)`` of the instance's own Squid: the recorded one, else any
    found by its command line (a Squid whose record a crash lost is still this instance's)."""
    state, pid = _recorded(instance_dir)
    if state != DEAD:
        return state, pid
    for found in find(instance_dir):
        found_state = _state(found)
        if found_state != DEAD:
            return found_state, found
    return DEAD, pid


# What a Squid's environment holds: nothing of the process that started it. Squid outlives that
# process (a module run, a controller's runner run), so an inherited variable would outlive it
# too: a caller's credentials in a daemon's /proc/<pid>/environ, or the controller's run mark,
# by which the processes of a timed-out run are swept (a live proxy would be killed with them).
SQUID_ENVIRONMENT = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}


def start(squid_binary: str, instance_dir: str, instance_name: str) -> int:
    """Start Squid for the instance and record its identity; returns the pid. When the record
    cannot be written (a full disk), the Squid just started is stopped before the error is
    raised: a Squid nobody recorded must not be left serving. Span ``squid.start``."""
    with backend_call("squid.start", {"local.instance": instance_name}) as span:
        pid = _start(squid_binary, instance_dir, instance_name)
        span.set_attribute("process.pid", pid)
        return pid


def signal_instance(pid: int, instance_name: str, what: str) -> None:
    """``reconfigure`` (SIGHUP: Squid rereads squid.conf and restarts its helpers) or ``resume``
    (SIGCONT: a suspended Squid carries on), in the span ``squid.<what>``."""
    signum = {"reconfigure": signal.SIGHUP, "resume": signal.SIGCONT}[what]
    with backend_call("squid.%s" % what, {"local.instance": instance_name, "process.pid": pid}):
        os.kill(pid, signum)


def _start(squid_binary: str, instance_dir: str, instance_name: str) -> int:
    conf = os.path.join(instance_dir, CONF)
    with safe_files.opened_dir(instance_dir) as dir_fd:
        out = safe_files.open_append(dir_fd, OUTPUT)  # root's file in root's directory, unfollowed
        try:
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
        finally:
            os.close(out)
        _children[child.pid] = child
        try:
            # Popen can return while the kernel is still finishing the exec: /proc/<pid>/cmdline
            # reads empty for a moment, and status() would call the starting Squid dead (get:
            # Stopped; delete: nothing to stop). Wait until it shows the conf.
            end = time.monotonic() + 2.0
            while not _names_conf(_cmdline(child.pid), conf) and child.poll() is None:
                if time.monotonic() >= end:
                    break
                time.sleep(0.005)
            stat = _proc_stat(child.pid)
            record = {"pid": child.pid, "startTicks": stat[1] if stat else None, "startedAt": time.time()}
            safe_files.write_atomic(dir_fd, PROCESS_RECORD, json.dumps(record))
        except BaseException:
            _kill_started(child)
            raise
    return child.pid


def _kill_started(child) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=5)
    _children.pop(child.pid, None)


class Survived(Exception):
    """A Squid of the instance outlived SIGKILL: the instance is not gone."""


def _signal_all(pids, signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            if signum == signal.SIGTERM and _state(pid) == SUSPENDED:
                os.kill(pid, signal.SIGCONT)
            os.kill(pid, signum)


def _wait_gone(instance_dir: str, seconds: float) -> list:
    """Wait up to ``seconds`` until no Squid of the instance is left; returns the survivors."""
    end = time.monotonic() + seconds
    while True:
        for pid, child in list(_children.items()):
            if child.poll() is not None:
                _children.pop(pid, None)
        left = _all_pids(instance_dir)
        if not left or time.monotonic() >= end:
            return left
        time.sleep(0.02)


def _all_pids(instance_dir: str) -> list:
    state, recorded = _recorded(instance_dir)
    pids = set(find(instance_dir))
    if state != DEAD:
        pids.add(recorded)
    return sorted(pid for pid in pids if _state(pid) != DEAD)


def stop(instance_dir: str, instance_name: str, deadline, grace: float = 5.0) -> None:
    """Stop every Squid of the instance (TERM, then KILL after ``grace``), recorded or found by
    its command line, and remove its shared memory; raises ``Survived`` while one is left.
    Span ``squid.stop``, with how many processes were signalled and whether SIGKILL was needed."""
    with backend_call("squid.stop", {"local.instance": instance_name}) as span:
        _stop(instance_dir, instance_name, deadline, grace, span)


def _stop(instance_dir: str, instance_name: str, deadline, grace: float, span) -> None:
    pids = _all_pids(instance_dir)
    span.set_attribute("local.processes", len(pids))
    if pids:
        _signal_all(pids, signal.SIGTERM)
        left = _wait_gone(instance_dir, deadline.budget(grace))
        if left:
            span.set_attribute("local.killed", True)
            _signal_all(left, signal.SIGKILL)
            left = _wait_gone(instance_dir, 2.0)
        if left:
            raise Survived("squid pid(s) %s of %s still running after SIGKILL" % (left, instance_dir))
    for segment in glob.glob("/dev/shm/%s-*" % service_name(instance_name)):
        with contextlib.suppress(OSError):
            os.unlink(segment)
