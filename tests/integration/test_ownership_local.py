"""``state: absent`` deletes only what is ours (issue 15), through real playbook runs on Squid.

Refused, with the instance left running: another owner's instance named by id or by name, an
instance of another installation, and an unmarked (hand-made) instance directory, also with
``force``. ``force: true`` deletes an instance of this installation whatever its uid.
"""

from __future__ import annotations

import json
import uuid

import pytest

from .local_env import instance_dirs
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"


def _create(tmp_path, local, uid: str) -> dict:
    run = run_playbook(
        tmp_path, [{"name": "create", PI: {"provider": "local", "uid": uid}}], module_defaults=local
    )
    assert run.rc == 0, run.stdout[-3000:]
    return run["create"]["instance"]


def _absent(args: dict, name: str) -> dict:
    return {"name": name, PI: dict({"provider": "local", "state": "absent"}, **args), "ignore_errors": True}


def test_absent_refuses_another_owners_instance_by_id_or_name(tmp_path, local):
    theirs = _create(tmp_path, local, "owner-%s" % uuid.uuid4().hex[:8])
    mine = "mine-%s" % uuid.uuid4().hex[:8]
    tasks = [
        _absent({"id": theirs["id"], "uid": mine}, "by id"),
        _absent({"name": theirs["name"], "uid": mine}, "by name"),
        _absent({"instances": [{"id": theirs["id"], "uid": mine}]}, "batch by id"),
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=local)
    for task in ("by id", "by name", "batch by id"):
        result = run[task]
        assert result.get("failed") is True, (task, result)
        assert result["error_class"] == "permanent", (task, result)
        assert "belongs to uid %r" % theirs["uid"] in result["msg"], (task, result["msg"])
        assert "force" in result["msg"]
    assert instance_dirs(tmp_path / "state") == [theirs["name"]]


def test_force_deletes_an_instance_of_this_installation_whatever_its_uid(tmp_path, local):
    theirs = _create(tmp_path, local, "owner-%s" % uuid.uuid4().hex[:8])
    run = run_playbook(
        tmp_path,
        [_absent({"id": theirs["id"], "uid": "someone-else", "force": True}, "forced")],
        module_defaults=local,
    )
    assert run["forced"].get("failed") is not True, run["forced"]
    assert run["forced"]["changed"] is True
    assert run["forced"]["instance"]["state"] == "absent"
    assert instance_dirs(tmp_path / "state") == []


def test_absent_refuses_an_instance_of_another_installation(tmp_path, local):
    theirs = _create(tmp_path, local, "owner-%s" % uuid.uuid4().hex[:8])
    other = dict(local, installation="someone-else")
    tasks = [_absent({"id": theirs["id"]}, "by id"), _absent({"id": theirs["id"], "force": True}, "forced")]
    run = run_playbook(tmp_path, tasks, module_defaults=other)
    for task in ("by id", "forced"):
        assert run[task].get("failed") is True, (task, run[task])
        assert run[task]["error_class"] == "permanent"
        assert "installation %r" % local["installation"] in run[task]["msg"], run[task]["msg"]
    assert instance_dirs(tmp_path / "state") == [theirs["name"]]


def test_absent_never_deletes_an_unmarked_instance_even_with_force(tmp_path, local):
    handmade = tmp_path / "state" / "instances" / "handmade"
    handmade.mkdir(parents=True)
    (handmade / "instance.json").write_text(
        json.dumps({"name": "handmade", "address": "127.0.0.9", "port": 1})
    )
    tasks = [
        _absent({"id": "local/handmade"}, "by id"),
        _absent({"id": "local/handmade", "force": True}, "forced"),
        _absent({"name": "handmade", "uid": "u"}, "by name"),
    ]
    try:
        run = run_playbook(tmp_path, tasks, module_defaults=local)
        for task in ("by id", "forced", "by name"):
            assert run[task].get("failed") is True, (task, run[task])
            assert run[task]["error_class"] == "permanent"
            assert "not managed" in run[task]["msg"], run[task]["msg"]
        assert handmade.is_dir()
    finally:
        (handmade / "instance.json").unlink(missing_ok=True)
        if handmade.is_dir():
            handmade.rmdir()
