"""The machine-wide lock of the libvirt test hypervisors, taken once per process.

Why a lock at all: the test hypervisors' daemons live in private mount namespaces
(``libvirt_namespace.sh``) and never collide, but the real-guest network has a fixed subnet and
route (tests/guest/network.py), and the clean-up of what a crashed session left (its daemons,
guests and network) is safe only when no other session is alive. Two test sessions on one
machine therefore take turns.

Why once per process: ``flock`` locks belong to an open file description, so a second ``open``
of the lock file in the same process waits for the first one for ever (a selection such as
``pytest -k "gc or health"`` hung that way when one fixture's start failed while holding it).
Every user in a process shares one descriptor and a count; the descriptor is closed when the
last user releases it, and never leaked by a start that fails.

Why the holder is written in the file: under pytest-xdist (``make faults`` runs ``-n``) the
holder keeps the lock until its worker's session ends, which waits for every other worker; a
second worker of the same run waiting for it would wait for ever. ``make faults`` keeps the
libvirt cells in one file and distributes by file; a test that reaches the lock from another
worker of the same run fails at once, naming the fix, instead of hanging the run.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time

LOCK_PATH = "/run/lock/egress-proxies-libvirt-tests.lock"
WAIT_NOTICE_SECONDS = 5.0
RUN_ENV = "PYTEST_XDIST_TESTRUNUID"  # the same in every worker of one pytest-xdist run

_state = {"handle": None, "users": 0}
_mutex = threading.Lock()


def acquire(on_first=None) -> None:
    """Take the lock (waiting for another session to finish, with a line saying so); the first
    acquisition in this process also runs ``on_first()`` (the clean-up of a crashed session),
    releasing the lock again when it raises."""
    with _mutex:
        if _state["users"] == 0:
            os.makedirs(os.path.dirname(LOCK_PATH), exist_ok=True)
            handle = open(LOCK_PATH, "a")  # noqa: SIM115 - held until the last release
            try:
                _wait_for_lock(handle)
            except BaseException:
                handle.close()
                raise
            _record_holder(handle)
            _state["handle"] = handle
            if on_first is not None:
                try:
                    on_first()
                except BaseException:
                    _close()
                    raise
        _state["users"] += 1


def release() -> None:
    with _mutex:
        if _state["users"] == 0:
            return
        _state["users"] -= 1
        if _state["users"] == 0:
            _close()


def held() -> bool:
    return _state["users"] > 0


def _close() -> None:
    handle, _state["handle"] = _state["handle"], None
    if handle is not None:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _record_holder(handle) -> None:
    handle.truncate(0)
    handle.write("%s %d\n" % (os.environ.get(RUN_ENV, "-"), os.getpid()))
    handle.flush()


def _holder() -> tuple:
    """(run id, pid) the holder wrote, or ("", "") when unreadable."""
    try:
        with open(LOCK_PATH, encoding="utf-8") as handle:
            run, _sep, pid = handle.read().strip().partition(" ")
    except OSError:
        return "", ""
    return run, pid


def _wait_for_lock(handle) -> None:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    run, pid = _holder()
    if os.environ.get(RUN_ENV) and run == os.environ[RUN_ENV]:
        raise RuntimeError(
            "%s is held by pid %s, another worker of this pytest-xdist run: the libvirt test "
            "hypervisors' tests must all run on one worker; keep them in one file with "
            "--dist loadfile, or run without -n" % (LOCK_PATH, pid)
        )
    started = time.monotonic()
    print(
        "test hypervisor: waiting for %s (another test session on this machine holds it)" % LOCK_PATH,
        file=sys.stderr,
        flush=True,
    )
    fcntl.flock(handle, fcntl.LOCK_EX)
    waited = time.monotonic() - started
    if waited > WAIT_NOTICE_SECONDS:
        print("test hypervisor: got %s after %.0f s" % (LOCK_PATH, waited), file=sys.stderr, flush=True)
