"""The four modules through real ``ansible-playbook`` runs, on the local provider and real Squid.

Covers what playbooks and AWX rely on: idempotence (a second run reports no change), check mode
that changes nothing, the batch form at 50 instances, clear failures for every kind of bad
input that leave nothing behind, and a cloud-init sentinel that never reaches the output, even
at -vvvv.
"""

from __future__ import annotations

import json
import uuid

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import uid_shards

from .local_env import instance_dirs, squid_pids
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
INFO = "crawl.egress_proxies.proxy_info"
GC = "crawl.egress_proxies.proxy_gc"
CHECK = "crawl.egress_proxies.proxy_check"


def test_create_is_idempotent_and_delete_is_too(tmp_path, local):
    uid = str(uuid.uuid4())
    tasks = [
        {"name": "create", PI: {"provider": "local", "uid": uid, "wait": True, "wait_timeout": 30}},
        {"name": "again", PI: {"provider": "local", "uid": uid}},
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=local)
    assert run.rc == 0, run.stdout[-3000:]
    created, again = run["create"], run["again"]
    assert created["changed"] is True
    assert created["instance"]["state"] == "Running"
    assert created["instance"]["ip"].startswith("127.")
    assert created["instance"]["uid"] == uid
    assert again["changed"] is False
    assert again["instance"]["id"] == created["instance"]["id"]
    assert [r["op"] for r in again["telemetry"]] == ["get"]

    delete = [
        {"name": "delete", PI: {"provider": "local", "uid": uid, "state": "absent"}},
        {"name": "delete again", PI: {"provider": "local", "uid": uid, "state": "absent"}},
        {"name": "info", INFO: {"provider": "local", "ids": [created["instance"]["id"]]}},
    ]
    run = run_playbook(tmp_path, delete, module_defaults=local)
    assert run.rc == 0, run.stdout[-3000:]
    assert run["delete"]["changed"] is True
    assert run["delete"]["instance"]["state"] == "absent"
    assert run["delete again"]["changed"] is False
    assert run["info"]["not_found"] == [created["instance"]["id"]]
    assert squid_pids(tmp_path / "state") == []


def test_check_mode_changes_nothing(tmp_path, local):
    uid = str(uuid.uuid4())
    run = run_playbook(
        tmp_path,
        [{"name": "create", PI: {"provider": "local", "uid": uid}}],
        module_defaults=local,
        check=True,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert run["create"]["changed"] is True
    assert run["create"]["instance"]["state"] == "absent"
    assert instance_dirs(tmp_path / "state") == []

    run = run_playbook(
        tmp_path, [{"name": "create", PI: {"provider": "local", "uid": uid}}], module_defaults=local
    )
    assert run.rc == 0
    instance_id = run["create"]["instance"]["id"]
    check_delete = [
        {"name": "delete", PI: {"provider": "local", "id": instance_id, "state": "absent"}},
        {"name": "gc", GC: {"live_uids": [], "min_age": "0"}},
    ]
    run = run_playbook(tmp_path, check_delete, module_defaults=local, check=True)
    assert run.rc == 0, run.stdout[-3000:]
    assert run["delete"]["changed"] is True
    assert [i["id"] for i in run["gc"]["would_delete"]] == [instance_id]
    assert run["gc"]["deleted"] == []
    assert instance_dirs(tmp_path / "state") == [instance_id.split("/", 1)[1]]


def test_batch_of_fifty_in_one_run(tmp_path, local):
    uids = ["batch-%02d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(50)]
    tasks = [
        {
            "name": "create",
            PI: {
                "provider": "local",
                "wait": True,
                "wait_timeout": 60,
                "instances": [{"uid": u} for u in uids],
            },
        },
        {"name": "list", INFO: {}},
        {
            "name": "delete",
            PI: {
                "provider": "local",
                "state": "absent",
                "wait": True,
                "instances": [{"uid": u} for u in uids],
            },
        },
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=local)
    assert run.rc == 0, run.stdout[-3000:]
    results = run["create"]["results"]
    assert [r["uid"] for r in results] == uids
    assert all(r["state"] == "Running" and not r["failed"] for r in results)
    assert len({r["ip"] for r in results}) == 50, "every proxy has its own address"
    assert sorted(i["uid"] for i in run["list"]["instances"]) == sorted(uids)
    assert all(r["state"] == "absent" for r in run["delete"]["results"])
    assert instance_dirs(tmp_path / "state") == []


BAD_INPUTS = [
    ("unknown provider", {"provider": "nope", "uid": "u1"}, "provider 'nope' is not configured", None),
    (
        "malformed id",
        {"provider": "local", "id": "zones/a/instances/b", "state": "absent"},
        "malformed local provider id",
        "permanent",
    ),
    ("missing uid", {"provider": "local"}, "uid: required when state=present", "permanent"),
    ("bad port", {"provider": "local", "uid": "u1", "port": 70000}, "port: 70000 is not a port", "permanent"),
    (
        "bad batch item",
        {"provider": "local", "instances": [{"uid": "ok-1"}, {"uid": "ok-2", "name": "Not_A_Label"}]},
        "instances[1].name: 'Not_A_Label' is not a DNS label",
        "permanent",
    ),
]


@pytest.mark.parametrize("label,args,message,error_class", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_fails_clearly_and_leaves_nothing(tmp_path, local, label, args, message, error_class):
    run = run_playbook(tmp_path, [{"name": "bad", PI: args}], module_defaults=local)
    assert run.rc != 0
    result = run["bad"]
    assert result["failed"] is True
    assert message in result["msg"], result["msg"]
    if error_class:
        assert result["error_class"] == error_class
    assert instance_dirs(tmp_path / "state") == []


@pytest.mark.parametrize(
    "providers,message",
    [
        (
            [{"name": "local", "type": "local", "local": {"stateDir": "relative"}}],
            "providers[0].local.stateDir",
        ),
        ([{"name": "local", "type": "locale"}], "providers[0].type: unknown provider type 'locale'"),
        ([{"name": "a", "type": "local"}, {"name": "a", "type": "local"}], "providers[1].name: duplicate"),
        (
            [{"name": "local", "type": "local", "local": {"stateDirectory": "/x"}}],
            "providers[0].local.stateDirectory: unknown field",
        ),
    ],
)
def test_bad_config_fails_clearly(tmp_path, providers, message):
    run = run_playbook(
        tmp_path, [{"name": "bad", PI: {"providers": providers, "provider": "local", "uid": "u"}}]
    )
    assert run.rc != 0
    assert message in run["bad"]["msg"], run["bad"]["msg"]
    assert run["bad"]["error_class"] == "permanent"


def test_missing_providers_file_names_the_path(tmp_path):
    missing = str(tmp_path / "nowhere.yaml")
    run = run_playbook(tmp_path, [{"name": "bad", INFO: {"providers_file": missing}}])
    assert run.rc != 0
    assert missing in run["bad"]["msg"]


def test_providers_file_from_the_environment(tmp_path, local):
    path = tmp_path / "providers.yaml"
    path.write_text(json.dumps({"installation": local["installation"], "providers": local["providers"]}))
    run = run_playbook(
        tmp_path, [{"name": "check", CHECK: {}}], env={"EGRESS_PROXIES_PROVIDERS_FILE": str(path)}
    )
    assert run.rc == 0, run.stdout[-3000:]
    targets = run["check"]["providers"][0]["targets"]
    assert [t["target"] for t in targets] == ["squid", "stateDir"]
    assert run["check"]["ready"] is True


def test_cloud_init_sentinel_never_printed(tmp_path, local):
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    uid = str(uuid.uuid4())
    tasks = [
        {
            "name": "create",
            PI: {"provider": "local", "uid": uid, "cloud_init": "#cloud-config\n# %s\n" % sentinel},
        },
        {
            "name": "batch",
            PI: {
                "provider": "local",
                "instances": [{"uid": uid + "-b", "cloud_init": "#cloud-config\n# %s\n" % sentinel}],
            },
        },
        {
            "name": "delete",
            PI: {"provider": "local", "state": "absent", "instances": [{"uid": uid}, {"uid": uid + "-b"}]},
        },
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=local, verbosity=4, json_output=False)
    assert run.rc == 0, run.stdout[-3000:]
    assert "debug_log" in run.stdout  # -vvvv really returned the provider log lines
    assert sentinel not in run.stdout
    assert sentinel not in run.stderr


def test_gc_collects_only_orphans_of_this_installation(tmp_path, local):
    live, orphan = str(uuid.uuid4()), str(uuid.uuid4())
    other = dict(local, installation="someone-else")
    run = run_playbook(
        tmp_path,
        [{"name": "create", PI: {"provider": "local", "instances": [{"uid": live}, {"uid": orphan}]}}],
        module_defaults=local,
    )
    assert run.rc == 0, run.stdout[-3000:]
    run = run_playbook(
        tmp_path,
        [
            {"name": "young", GC: {"live_uids": [live]}},
            {"name": "other installation", GC: {"live_uids": [], "min_age": "0"}},
        ],
        module_defaults=other,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert (
        run["young"]["deleted"] == [] and run["young"]["kept"] == []
    )  # other installation lists nothing of ours
    run = run_playbook(
        tmp_path,
        [
            {"name": "young", GC: {"live_uids": [live]}},
            {"name": "sweep", GC: {"live_uids": [live], "min_age": "0"}},
            {"name": "info", INFO: {}},
        ],
        module_defaults=local,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert {k["reason"] for k in run["young"]["kept"]} == {"live", "younger-than-min-age"}
    assert [d["uid"] for d in run["sweep"]["deleted"]] == [orphan]
    assert [i["uid"] for i in run["info"]["instances"]] == [live]


def test_gc_refuses_to_guess_live_uids(tmp_path, local):
    run = run_playbook(tmp_path, [{"name": "gc", GC: {}}], module_defaults=local)
    assert run.rc != 0
    assert "live_uids: required" in run["gc"]["msg"]


def test_fail_item_isolates_an_invalid_batch_item(tmp_path, local):
    good = str(uuid.uuid4())
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "batch",
                PI: {
                    "provider": "local",
                    "invalid_items": "fail_item",
                    "instances": [{"uid": good}, {"uid": "x", "provider": "nope"}],
                },
            }
        ],
        module_defaults=local,
    )
    assert run.rc != 0  # the run still reports the failed item
    first, second = run["batch"]["results"]
    assert first["failed"] is False and first["uid"] == good and first["id"].startswith("local/")
    assert second["failed"] is True and second["error_class"] == "permanent"
    assert "provider 'nope' is not configured" in second["msg"]
    assert len(instance_dirs(tmp_path / "state")) == 1


def _uid_in_shard(shard: int, count: int) -> str:
    while True:
        uid = str(uuid.uuid4())
        if uid_shards.shard_of(uid, count) == shard:
            return uid


def test_gc_with_uid_shards_collects_only_the_owned_shard(tmp_path, local):
    mine, theirs = _uid_in_shard(0, 2), _uid_in_shard(1, 2)
    run = run_playbook(
        tmp_path,
        [{"name": "create", PI: {"provider": "local", "instances": [{"uid": mine}, {"uid": theirs}]}}],
        module_defaults=local,
    )
    assert run.rc == 0, run.stdout[-3000:]
    shard_args = {"live_uids": [], "min_age": "0", "uid_shards": {"count": 2, "owned": [0]}}
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "bad",
                GC: dict(shard_args, uid_shards={"count": 2, "owned": [2]}),
                "ignore_errors": True,
            },
            {"name": "dry", GC: shard_args, "check_mode": True},
            {"name": "sweep", GC: shard_args},
            {"name": "info", INFO: {}},
        ],
        module_defaults=local,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert "uid_shards.owned[0]: 2 is not a shard of 2" in run["bad"]["msg"]
    assert [d["uid"] for d in run["dry"]["would_delete"]] == [mine]
    assert [(k["uid"], k["reason"]) for k in run["dry"]["kept"]] == [(theirs, "other-shard")]
    assert run["dry"]["deleted"] == []
    assert [d["uid"] for d in run["sweep"]["deleted"]] == [mine]
    assert [(k["uid"], k["reason"]) for k in run["sweep"]["kept"]] == [(theirs, "other-shard")]
    assert run["sweep"]["uid_shards"] == {"count": 2, "owned": [0]}
    assert [i["uid"] for i in run["info"]["instances"]] == [theirs]
