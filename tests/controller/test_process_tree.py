"""``kill_run`` returns only once every process of the run is really gone (CI's red
``ctl-run-timeout`` cell: a process of the timed-out run was still alive after the controller
logged the timeout).

An empty scan of ``/proc`` is no proof: a SIGKILLed process tearing down a large memory has no
environment block left (so it carries no mark) while it still runs, and a process in the middle
of an exec has no block yet. Both are made here with real processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from contract import pids
from egress_proxies_controller.runs import process_tree

# touches a gigabyte, so its teardown after SIGKILL takes a while after its block is gone
BIG = (
    "import sys, time\n"
    "held = b'x' * (1 << 30)\n"
    "sys.stdout.write('ready'); sys.stdout.flush()\n"
    "time.sleep(120)\n"
)
SMALL = "import sys, time\nsys.stdout.write('ready'); sys.stdout.flush()\ntime.sleep(120)\n"


def _start(run_id: str, code: str) -> subprocess.Popen:
    env = dict(os.environ, **{process_tree.RUN_ENV: run_id})
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    assert proc.stdout.read(5) == b"ready"
    return proc


def _reap(*procs: subprocess.Popen) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


def test_a_killed_process_still_tearing_down_its_memory_is_waited_for():
    run_id = uuid.uuid4().hex
    proc = _start(run_id, BIG)
    try:
        assert process_tree.kill_run(run_id) == 1
        assert not pids.running(proc.pid), "kill_run returned while the process was still exiting"
    finally:
        _reap(proc)


def test_a_process_missing_from_one_scan_is_still_killed(monkeypatch):
    """The second scan misses ``late`` (as a scan misses a process in the middle of an exec):
    the scans that follow find and kill it."""
    run_id = uuid.uuid4().hex
    first, late = _start(run_id, SMALL), _start(run_id, SMALL)
    scans = [[first.pid], []]
    real = process_tree.marked

    def scripted(wanted: str) -> list:
        return scans.pop(0) if scans else real(wanted)

    monkeypatch.setattr(process_tree, "marked", scripted)
    try:
        assert process_tree.kill_run(run_id) == 2
        assert not pids.running(late.pid), "a process the run left is still running"
    finally:
        _reap(first, late)


def test_only_the_runs_own_processes_are_killed():
    run_id = uuid.uuid4().hex
    mine, other = _start(run_id, SMALL), _start(uuid.uuid4().hex, SMALL)
    try:
        assert process_tree.kill_run(run_id) == 1
        assert not pids.running(mine.pid) and pids.running(other.pid)
    finally:
        _reap(mine, other)
