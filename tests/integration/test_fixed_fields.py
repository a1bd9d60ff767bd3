"""What an existing proxy cannot change in place is refused, never silently ignored, and what it
can change diffs as a change (issue 28 §7), through real ``ansible-playbook`` runs (real Squid).

A ``port`` other than the instance's fails ``permanent`` naming the port and both values, with
nothing changed (Squid keeps its process and port); adding ``auth`` to an existing proxy diffs
as that instance on both sides with ``auth`` changed, not as an instance appearing from
``before: {}``.
"""

from __future__ import annotations

import json
import socket
import uuid

import pytest

from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"


def _process(tmp_path, name: str) -> int:
    return json.loads((tmp_path / "state" / "instances" / name / "process.json").read_text())["pid"]


def _make(tmp_path, local, prefix: str) -> tuple:
    """A Running proxy without auth: its uid and its instance result."""
    uid = "%s-%s" % (prefix, uuid.uuid4().hex[:8])
    made = run_playbook(
        tmp_path,
        [{"name": "make", PI: {"provider": "local", "uid": uid, "wait": True}}],
        module_defaults=local,
    )
    assert made.rc == 0, made.stdout[-3000:]
    return uid, made["make"]["instance"]


def test_a_changed_port_is_refused_and_changes_nothing(tmp_path, local):
    uid, instance = _make(tmp_path, local, "fixed")
    pid = _process(tmp_path, instance["name"])
    run = run_playbook(
        tmp_path,
        [{"name": "port", PI: {"provider": "local", "uid": uid, "port": 3129}, "ignore_errors": True}],
        module_defaults=local,
        diff=True,
    )
    result = run["port"]
    assert result.get("failed") is True and result["error_class"] == "permanent", result
    assert "port: instance %s listens on port 3128, not 3129" % instance["name"] in result["msg"]
    assert "cannot change in place" in result["msg"]
    assert result["instance"]["reason"] == "PortFixedAtCreation"  # the controller replaces, never latches
    assert result.get("changed") is not True
    assert _process(tmp_path, instance["name"]) == pid
    with socket.create_connection((instance["ip"], 3128), timeout=5):
        pass


def test_adding_auth_to_an_existing_proxy_diffs_as_a_change(tmp_path, local):
    uid, instance = _make(tmp_path, local, "auth")
    name = instance["name"]
    args = {"provider": "local", "uid": uid, "auth": {"username": "crawler", "password": "s3cret-pw"}}
    run = run_playbook(tmp_path, [{"name": "auth", PI: args}], module_defaults=local, diff=True)
    assert run.rc == 0, run.stdout[-3000:]
    result = run["auth"]
    assert result["changed"] is True
    diff = result["diff"]
    assert diff["before"] != {}, diff
    assert diff["before"]["name"] == diff["after"]["name"] == name
    assert diff["before"]["auth"] != diff["after"]["auth"]
    assert "s3cret-pw" not in run.stdout
