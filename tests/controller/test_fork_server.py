"""The fork server (issue 27): each run's ``ansible-playbook`` is a fork of one that imported
ansible-core once, with real ansible-runner runs through the executor.

A run is forked from the server, and every process of it carries its run's mark (so a timeout or
a lost lease kills all of it: test_executor_runs covers the kill); each run sees its own per-run
environment; a run whose environment is not the server's, or that cannot reach the server, runs
the real ``ansible-playbook`` with the same result, and the server is replaced.
"""

from __future__ import annotations

import glob
import json
import os
import time

import pytest
from egress_proxies_controller.runs.executor import Executor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FALLBACK = "running ansible-playbook itself"

# From the task's command up to pid 1: each process's pid, whether /proc shows it carrying this
# run's mark, and the per-run environment the task saw.
PROBE = r"""
import json, os
mark = ("EGRESS_PROXIES_RUN=%s" % os.environ["EGRESS_PROXIES_RUN"]).encode()
chain, pid = [], os.getpid()
while pid > 1:
    with open("/proc/%d/environ" % pid, "rb") as handle:
        chain.append([pid, mark in handle.read().split(b"\0")])
    with open("/proc/%d/stat" % pid) as handle:
        pid = int(handle.read().rpartition(")")[2].split()[1])
keys = ("EGRESS_PROXIES_RUN", "EGRESS_PROXIES_PROVIDERS_FILE", "AWX_ISOLATED_DATA_DIR")
print(json.dumps({"chain": chain, "env": {key: os.environ.get(key) for key in keys}}))
"""

PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - name: probe
      ansible.builtin.command:
        argv: [python3, -c, %s]
      changed_when: false
""" % json.dumps(PROBE)


@pytest.fixture
def executor(tmp_path):
    providers = tmp_path / "providers.yaml"
    providers.write_text("providers: []\n")
    executor = Executor(
        str(tmp_path / "work"),
        str(providers),
        run_timeout=120,
        collections_path=os.path.join(ROOT, ".venv", "collections"),
        keep_artifacts=20,
    )
    yield executor
    executor.close()


def probe(executor: Executor) -> dict:
    results = executor.run_playbook("probe.yml", PLAYBOOK, {}, "probe")
    assert not results.failure, results.failure
    return json.loads(results["probe"]["stdout"])


def last_stdout(executor: Executor) -> str:
    newest = max(glob.glob(os.path.join(executor.work_dir, "runs", "*")), key=os.path.getmtime)
    return "".join(open(path).read() for path in glob.glob(os.path.join(newest, "artifacts", "*", "stdout")))


def test_a_run_is_a_fork_of_the_server_and_every_process_of_it_carries_the_run_mark(executor):
    first = probe(executor)
    server = executor.launcher.server_pid
    assert server is not None and FALLBACK not in last_stdout(executor)
    pids = [pid for pid, _marked in first["chain"]]
    assert server in pids, "the run's processes do not descend from the fork server"
    # The task's process, the worker and the forked ansible-playbook: all found by process_tree.
    below = first["chain"][: pids.index(server)]
    assert len(below) >= 3 and all(marked for _pid, marked in below), first["chain"]
    assert not dict(first["chain"])[server]  # the server itself belongs to no run

    # A second run: the same server, its own run id and artifact directory (nothing of the first).
    second = probe(executor)
    assert executor.launcher.server_pid == server and executor.launcher.starts == 1
    assert second["env"]["EGRESS_PROXIES_RUN"] != first["env"]["EGRESS_PROXIES_RUN"]
    assert second["env"]["AWX_ISOLATED_DATA_DIR"] != first["env"]["AWX_ISOLATED_DATA_DIR"]
    assert second["env"]["EGRESS_PROXIES_PROVIDERS_FILE"] == executor.providers_file

    executor.close()  # the controller's exit: its server goes with it
    assert executor.launcher.server_pid is None and not os.path.exists("/proc/%d/cmdline" % server)


def test_a_run_in_another_environment_runs_ansible_playbook_itself_and_the_server_is_replaced(
    executor, monkeypatch
):
    probe(executor)
    stale = executor.launcher.server_pid
    monkeypatch.setenv("EGRESS_PROXIES_TEST_CHANGED", "1")  # what ansible-core read no longer holds
    changed = probe(executor)
    assert "the run's environment is not the fork server's: " + FALLBACK in last_stdout(executor)
    assert stale not in [pid for pid, _marked in changed["chain"]]
    deadline = time.monotonic() + 10
    while executor.launcher.server_pid == stale and time.monotonic() < deadline:
        time.sleep(0.05)  # a stale server exits once its runs have ended
    again = probe(executor)
    assert executor.launcher.starts == 2 and FALLBACK not in last_stdout(executor)
    assert executor.launcher.server_pid in [pid for pid, _marked in again["chain"]]


def test_a_run_that_cannot_reach_the_server_runs_ansible_playbook_itself(executor):
    probe(executor)
    os.unlink(executor.launcher.socket_path)
    result = probe(executor)
    assert "fork server unavailable" in last_stdout(executor) and FALLBACK in last_stdout(executor)
    assert all(marked for _pid, marked in result["chain"][:2])  # the real one carries the mark too


def test_off_ansible_runner_starts_ansible_playbook_itself(tmp_path):
    providers = tmp_path / "providers.yaml"
    providers.write_text("providers: []\n")
    executor = Executor(str(tmp_path / "work"), str(providers), fork_server=False)
    try:
        result = probe(executor)
        assert executor.launcher.server_pid is None and executor.launcher.starts == 0
        assert all(marked for _pid, marked in result["chain"][:3])
    finally:
        executor.close()


def test_a_work_directory_longer_than_a_socket_path_may_be_still_forks(tmp_path):
    """A Unix socket's path may not exceed 107 bytes; a work directory's may (pytest's own were:
    every run of a sharded controller failed to start with "AF_UNIX path too long")."""
    providers = tmp_path / "providers.yaml"
    providers.write_text("providers: []\n")
    executor = Executor(str(tmp_path / ("w" * 120)), str(providers), fork_server=True)
    try:
        assert len(executor.launcher.socket_path) > 108
        result = probe(executor)
        assert executor.launcher.server_pid in [pid for pid, _marked in result["chain"]]
        assert FALLBACK not in last_stdout(executor)
    finally:
        executor.close()
