"""A run that times out stops for real and keeps the answers it had (issue 14), with real
ansible-runner runs of the real modules.

One run carries a create on the local provider (real Squid) and a get on a kubernetes provider
whose API server is a loopback socket that accepts connections and never answers, so the get's
module process blocks far past the run timeout. After ``execute`` returns: no process of the run
is alive (ansible's workers call setsid, so killing the process group is not enough), the
blocked module's connection was closed by its death, the create keeps its answer and only the
get is Transient.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml
from contract.local_backend import random_loopback_range
from egress_proxies_controller.proxy.reconciler import CREATE, DELETE, GET, PHASE_CREATE, PHASE_FINAL, Action
from egress_proxies_controller.runs import process_tree
from egress_proxies_controller.runs.executor import Executor

from .blackhole import Blackhole, blackhole_kubeconfig

pytestmark = [pytest.mark.squid]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def setup(tmp_path):
    hole = Blackhole()
    kubeconfig = blackhole_kubeconfig(hole, tmp_path)
    providers = {
        "installation": "exec-test",
        "providers": [
            {
                "name": "local",
                "type": "local",
                "local": {"stateDir": str(tmp_path / "state"), "addressRange": random_loopback_range()},
            },
            {
                "name": "hole",
                "type": "kubernetes",
                "kubernetes": {"kubeconfig": kubeconfig, "requestTimeoutSeconds": 600},
            },
        ],
    }
    path = tmp_path / "providers.yaml"
    path.write_text(yaml.safe_dump(providers))
    executor = Executor(
        str(tmp_path / "work"),
        str(path),
        # Long enough for ansible-playbook to start and reach the get on a loaded 2-core machine
        # (8 s was not, beside other test sessions); the blocked get makes the run last this long.
        run_timeout=20,
        call_timeout=600,
        collections_path=os.path.join(ROOT, ".venv", "collections"),
        identity="test",
        run_log=str(tmp_path / "runs.jsonl"),
    )
    yield executor, hole, tmp_path
    hole.close()


FIELDS = {"ns/a": {"namespace": "ns", "proxy_name": "a", "port": 3128, "placement": {}}}


def test_a_timed_out_run_leaves_no_process_and_keeps_finished_answers(setup):
    executor, hole, tmp_path = setup
    actions = {
        "ns/a": Action(CREATE, PHASE_CREATE, "local", "", "proxy-exectesta", "uid-a", 1, "h"),
        "ns/b": Action(GET, "poll", "hole", "ns/proxy-exectestb", "proxy-exectestb", "uid-b", 1, "h"),
    }
    try:
        answers = executor.execute(actions, FIELDS)
        assert hole.accepted.is_set(), "the get never reached the blackhole"
        runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
        run_id = runs[0]["run"]
        assert process_tree.marked(run_id) == []  # every process of the run is gone ...
        assert hole.closed.wait(5), "the blocked module process survived the run"  # ... really
        assert answers["ns/a"].ok and answers["ns/a"].instance["id"] == "local/proxy-exectesta"
        assert not answers["ns/b"].ok and answers["ns/b"].error_class == "transient"
        assert "timeout" in answers["ns/b"].message
    finally:
        delete = Action(DELETE, PHASE_FINAL, "local", "local/proxy-exectesta", "proxy-exectesta", "uid-a")
        executor.execute({"ns/a": delete}, FIELDS)


BIG_RESULT = """\
- name: a task whose result is larger than ansible-runner keeps by default
  hosts: localhost
  gather_facts: false
  tasks:
    - name: big
      ansible.builtin.command:
        argv: [python3, -c, "print('x' * 800000)"]
      changed_when: false
"""


def test_a_task_result_larger_than_ansible_runners_default_is_read_whole(setup):
    """ansible-runner replaces a result over 700,000 characters with {}: a kubernetes list of
    2000+ Pods was read as no answer, and the whole poll round re-read by id."""
    executor, _hole, _tmp_path = setup
    results = executor.run_playbook("big.yml", BIG_RESULT, {}, "big result")
    assert len(results["big"]["stdout"]) == 800000
