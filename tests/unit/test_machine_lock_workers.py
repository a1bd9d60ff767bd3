"""The libvirt test lock under pytest-xdist: a worker that finds it held by another worker of
the same run fails at once, naming the fix, instead of waiting for a holder that keeps it until
the whole run ends (``make faults`` hung that way before the libvirt cells had a file of their
own)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from contract import machine_lock


@pytest.fixture(autouse=True)
def own_lock_state(monkeypatch):
    """A fresh per-process count: in a whole session the libvirt fixtures may hold the real
    lock already, and then acquire() only counts a user and never opens the file."""
    monkeypatch.setattr(machine_lock, "_state", {"handle": None, "users": 0})


HOLDER = """
import fcntl, sys, time
handle = open(sys.argv[1], "a")
fcntl.flock(handle, fcntl.LOCK_EX)
handle.truncate(0)
handle.write("%s 4242\\n" % sys.argv[2])
handle.flush()
print("held", flush=True)
time.sleep(60)
"""


@pytest.fixture
def held_by_run(tmp_path, monkeypatch):
    """The lock file held by another process that wrote run id ``run-a`` as its holder."""
    path = str(tmp_path / "libvirt-tests.lock")
    monkeypatch.setattr(machine_lock, "LOCK_PATH", path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path, "run-a"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()


def test_a_second_worker_of_the_same_run_fails_at_once_naming_the_fix(held_by_run, monkeypatch):
    monkeypatch.setenv(machine_lock.RUN_ENV, "run-a")
    started = time.monotonic()

    with pytest.raises(RuntimeError, match="held by pid 4242, another worker of this pytest-xdist run"):
        machine_lock.acquire()

    assert time.monotonic() - started < 5
    assert not machine_lock.held()


def test_a_holder_of_another_run_is_waited_for(held_by_run, monkeypatch):
    monkeypatch.setenv(machine_lock.RUN_ENV, "run-b")
    monkeypatch.setattr(machine_lock.fcntl, "flock", _refuse_without_blocking)

    with pytest.raises(_WouldWait):
        machine_lock.acquire()
    assert not machine_lock.held()


class _WouldWait(Exception):
    pass


def _refuse_without_blocking(handle, operation):
    """The lock taken elsewhere: a non-blocking try fails; a blocking one would wait (raised here)."""
    if operation & machine_lock.fcntl.LOCK_NB:
        raise BlockingIOError
    if operation == machine_lock.fcntl.LOCK_UN:
        return
    raise _WouldWait


def test_the_holder_is_recorded_with_its_run(tmp_path, monkeypatch):
    path = str(tmp_path / "libvirt-tests.lock")
    monkeypatch.setattr(machine_lock, "LOCK_PATH", path)
    monkeypatch.setenv(machine_lock.RUN_ENV, "run-c")
    machine_lock.acquire()
    try:
        with open(path, encoding="utf-8") as handle:
            assert handle.read() == "run-c %d\n" % os.getpid()
    finally:
        machine_lock.release()
