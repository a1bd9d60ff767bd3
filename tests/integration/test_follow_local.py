"""``follow`` on a real backend (issue 38, Ready as they come): the local provider's Squids
created in one batch are answered Running by that run, each with its address, without the create
reading its instance back (the follower's reads do), and an ordinary batch without ``follow``
still reads each instance back once after its create."""

from __future__ import annotations

import pytest

from .playbook import run_playbook

pytestmark = [pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"


def _ops(result: dict) -> list:
    return [call["op"] for call in result.get("telemetry") or []]


def test_a_followed_batch_answers_its_instances_running(tmp_path, local):
    items = [{"uid": "follow-local-%d" % i} for i in range(3)]
    tasks = [
        {"name": "followed", PI: {"provider": "local", "instances": items, "follow": 30}},
        {"name": "again", PI: {"provider": "local", "instances": items}},
        {"name": "gone", PI: {"provider": "local", "state": "absent", "instances": items}},
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=local)
    assert run.rc == 0, run.stdout[-3000:]
    followed = run["followed"]["results"]
    assert [r["state"] for r in followed] == ["Running"] * 3, followed
    assert all(r["ip"].startswith("127.") and r["changed"] and not r["failed"] for r in followed)
    again = run["again"]["results"]  # what a read says now: the same instances, already there
    assert [(r["id"], r["ip"], r["changed"]) for r in again] == [(r["id"], r["ip"], False) for r in followed]
    ops = _ops(run["followed"])
    # each looked up before its create (NotFound), then read again by the follower, not by the create
    assert ops.count("create") == 3 and ops.count("get") >= 6, ops
    assert all(r["state"] == "absent" for r in run["gone"]["results"])


def test_without_follow_a_create_reads_its_instance_back(tmp_path, local):
    tasks = [
        {"name": "plain", PI: {"provider": "local", "instances": [{"uid": "follow-local-plain"}]}},
        {
            "name": "gone",
            PI: {"provider": "local", "state": "absent", "instances": [{"uid": "follow-local-plain"}]},
        },
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=local)
    assert run.rc == 0, run.stdout[-3000:]
    ops = _ops(run["plain"])
    assert ops[ops.index("create") + 1 :].count("get") == 1, ops
