"""``--diff`` on the modules that change something, through real ``ansible-playbook`` runs on
the local provider (real Squid): a create shows the instance appearing (name, provider, id,
placement, port), a delete the other way, in ``--check`` as without it, single and batch
forms; ``proxy_gc`` shows each collected orphan disappearing. Without ``--diff`` no diff is
returned. Nothing of cloud-init reaches the diff.
"""

from __future__ import annotations

import uuid

import pytest

from .local_env import instance_dirs
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
GC = "crawl.egress_proxies.proxy_gc"
SENTINEL = "diff-sentinel-%s" % uuid.uuid4().hex


def _create(uid: str) -> dict:
    return {
        "provider": "local",
        "uid": uid,
        "port": 3130,
        "placement": {"zone": "lo-a"},
        "cloud_init": SENTINEL,
    }


def test_create_and_delete_diff_in_check_mode_and_for_real(tmp_path, local):
    uid = str(uuid.uuid4())
    tasks = [{"name": "create", PI: _create(uid)}]
    check = run_playbook(tmp_path, tasks, module_defaults=local, check=True, diff=True)
    assert check.rc == 0, check.stdout[-3000:]
    diff = check["create"]["diff"]
    assert diff["before"] == {}
    after = diff["after"]
    assert after["name"] == check["create"]["instance"]["name"]
    assert (after["provider"], after["placement"], after["port"]) == ("local", {"zone": "lo-a"}, 3130)
    assert instance_dirs(tmp_path / "state") == []  # check mode made nothing

    real = run_playbook(tmp_path, tasks, module_defaults=local, diff=True)
    assert real.rc == 0, real.stdout[-3000:]
    created = real["create"]
    assert created["diff"]["before"] == {} and created["diff"]["after"]["id"] == created["instance"]["id"]
    assert created["diff"]["after"]["port"] == 3130
    assert SENTINEL not in real.stdout + real.stderr

    again = run_playbook(tmp_path, tasks, module_defaults=local, diff=True)
    assert again["create"]["changed"] is False
    assert again["create"]["diff"] == {"before": {}, "after": {}}

    delete = [{"name": "delete", PI: {"provider": "local", "uid": uid, "state": "absent"}}]
    check = run_playbook(tmp_path, delete, module_defaults=local, check=True, diff=True)
    assert check["delete"]["diff"]["after"] == {}
    assert check["delete"]["diff"]["before"]["id"] == created["instance"]["id"]
    assert len(instance_dirs(tmp_path / "state")) == 1
    real = run_playbook(tmp_path, delete, module_defaults=local, diff=True)
    assert real.rc == 0, real.stdout[-3000:]
    assert real["delete"]["diff"]["before"]["name"] == created["instance"]["name"]
    assert real["delete"]["diff"]["after"] == {}

    plain = run_playbook(tmp_path, tasks, module_defaults=local, check=True)
    assert "diff" not in plain["create"]


def test_batch_diff_lists_the_changed_items_and_the_default_callback_shows_it(tmp_path, local):
    uids = [str(uuid.uuid4()) for _n in range(3)]
    first = [{"name": "one", PI: {"provider": "local", "uid": uids[0]}}]
    assert run_playbook(tmp_path, first, module_defaults=local).rc == 0
    batch = [{"name": "batch", PI: {"provider": "local", "instances": [{"uid": u} for u in uids]}}]
    run = run_playbook(tmp_path, batch, module_defaults=local, diff=True)
    assert run.rc == 0, run.stdout[-3000:]
    names = {r["uid"]: r["name"] for r in run["batch"]["results"]}
    assert [d["after"]["name"] for d in run["batch"]["diff"]] == [names[uids[1]], names[uids[2]]]
    # What a user sees: the default callback prints each diff with its header.
    delete = [
        {
            "name": "delete",
            PI: {"provider": "local", "state": "absent", "instances": [{"uid": u} for u in uids]},
        }
    ]
    shown = run_playbook(
        tmp_path,
        delete,
        module_defaults=local,
        diff=True,
        check=True,
        json_output=False,
    )
    assert shown.rc == 0, shown.stdout[-3000:]
    for uid in uids:
        assert "--- before: %s (local)" % names[uid] in shown.stdout, shown.stdout[-3000:]
    assert run_playbook(tmp_path, delete, module_defaults=local).rc == 0


def test_gc_diff_shows_each_collected_orphan(tmp_path, local):
    uids = [str(uuid.uuid4()) for _n in range(2)]
    create = [{"name": "create", PI: {"provider": "local", "instances": [{"uid": u} for u in uids]}}]
    created = run_playbook(tmp_path, create, module_defaults=local)
    assert created.rc == 0, created.stdout[-3000:]
    ids = {r["uid"]: r["id"] for r in created["create"]["results"]}
    gc = [{"name": "gc", GC: {"live_uids": [uids[0]], "min_age": "0s"}}]
    check = run_playbook(tmp_path, gc, module_defaults=local, check=True, diff=True)
    assert [(d["before"]["id"], d["after"]) for d in check["gc"]["diff"]] == [(ids[uids[1]], {})]
    real = run_playbook(tmp_path, gc, module_defaults=local, diff=True)
    assert real.rc == 0, real.stdout[-3000:]
    (diff,) = real["gc"]["diff"]
    assert diff["before"]["uid"] == uids[1] and diff["after"] == {}
    assert len(instance_dirs(tmp_path / "state")) == 1
