"""proxy_instance's ``auth`` through real ``ansible-playbook`` runs, real Squid and real traffic:
credentials required (407 without), ranges still enforced (403 outside), rotation in place and
idempotent, check mode changing nothing, bad credentials refused naming the field, and the
password never printed, even at -vvvv."""

from __future__ import annotations

import uuid

import pytest
from proxy_traffic import fetch_via, origin_server, until

from .local_env import instance_dirs
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
SENTINEL = "Sentinel-%s" % uuid.uuid4().hex
GOOD = "good-pw-1"  # a password where the username is at fault (no_log masks it in output)
ALLOWED, OUTSIDE = "127.0.0.2", "127.0.0.3"


@pytest.fixture
def ranged(local):
    local["providers"][0]["local"]["allowedSourceRanges"] = ["%s/32" % ALLOWED]
    return local


def _create(uid: str, password: str, **extra) -> dict:
    args = {"provider": "local", "uid": uid, "auth": {"username": "crawler", "password": password}}
    args.update(extra)
    return {PI: args}


def _all_output(runs) -> str:
    return "\n".join(run.stdout + run.stderr for run in runs)


def test_auth_through_the_module_with_rotation(tmp_path, ranged):
    uid = str(uuid.uuid4())
    rotated = "Rotated-" + SENTINEL
    first = run_playbook(
        tmp_path,
        [
            dict(_create(uid, SENTINEL, wait=True, wait_timeout=30), name="create"),
            dict(_create(uid, SENTINEL), name="again"),
        ],
        module_defaults=ranged,
        verbosity=4,
    )
    assert first.rc == 0, first.stdout[-3000:]
    instance = first["create"]["instance"]
    assert first["create"]["changed"] is True and instance["state"] == "Running"
    assert first["again"]["changed"] is False
    assert [r["op"] for r in first["again"]["telemetry"]] == ["get", "sync_auth"]
    assert "debug_log" in first.stdout  # -vvvv really returned the provider's log lines
    ip = instance["ip"]
    with origin_server() as origin:
        assert fetch_via(ip, 3128, origin, ALLOWED, ("crawler", SENTINEL)) == (200, "hello /via-proxy")
        assert fetch_via(ip, 3128, origin, ALLOWED)[0] == 407
        assert fetch_via(ip, 3128, origin, ALLOWED, ("crawler", "wrong"))[0] == 407
        assert fetch_via(ip, 3128, origin, OUTSIDE, ("crawler", SENTINEL))[0] == 403

        dry = run_playbook(
            tmp_path, [dict(_create(uid, rotated), name="rotate")], module_defaults=ranged, check=True
        )
        assert dry.rc == 0 and dry["rotate"]["changed"] is True
        assert fetch_via(ip, 3128, origin, ALLOWED, ("crawler", SENTINEL))[0] == 200

        rotate = run_playbook(
            tmp_path,
            [dict(_create(uid, rotated), name="rotate"), dict(_create(uid, rotated), name="rotate again")],
            module_defaults=ranged,
            verbosity=4,
        )
        assert rotate.rc == 0, rotate.stdout[-3000:]
        assert rotate["rotate"]["changed"] is True and rotate["rotate"]["instance"]["id"] == instance["id"]
        assert rotate["rotate again"]["changed"] is False
        omitted = run_playbook(
            tmp_path, [{"name": "no auth", PI: {"provider": "local", "uid": uid}}], module_defaults=ranged
        )
        assert omitted.rc == 0 and omitted["no auth"]["changed"] is False
        assert [r["op"] for r in omitted["no auth"]["telemetry"]] == ["get"]  # never opened by omission
        until(
            "the rotated password accepted",
            lambda: fetch_via(ip, 3128, origin, ALLOWED, ("crawler", rotated))[0] == 200,
        )
        assert fetch_via(ip, 3128, origin, ALLOWED, ("crawler", SENTINEL))[0] == 407
        assert fetch_via(ip, 3128, origin, ALLOWED)[0] == 407

    output = _all_output([first, dry, rotate, omitted])
    assert SENTINEL not in output
    state = tmp_path / "state" / "instances" / instance["name"]
    for path in state.rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path


BAD = [
    ({"username": "a:b", "password": GOOD}, "auth.username: 'a:b' contains ':'"),
    ({"username": "", "password": GOOD}, "auth.username: must not be empty"),
    ({"username": "u" * 65, "password": GOOD}, "auth.username: 'uuuu"),
    ({"username": "two words", "password": GOOD}, "auth.username: 'two words' contains whitespace"),
    ({"username": "u", "password": ""}, "auth.password: must not be empty"),
    ({"username": "u", "password": "a\nb" + SENTINEL}, "auth.password: contains control characters"),
    ({"username": "u", "password": "a\x00b" + SENTINEL}, "auth.password: contains control characters"),
    ({"username": "u", "password": "p" * 257}, "auth.password: is longer than 256 characters"),
    ({"username": "u"}, "password"),
]


@pytest.mark.parametrize(
    ("auth", "message"), BAD, ids=[m.split(":")[0] + str(i) for i, (_a, m) in enumerate(BAD)]
)
def test_bad_credentials_are_refused_naming_the_field(tmp_path, local, auth, message):
    uid = str(uuid.uuid4())
    run = run_playbook(
        tmp_path,
        [
            {"name": "single", PI: {"provider": "local", "uid": uid, "auth": auth}},
        ],
        module_defaults=local,
    )
    result = run["single"]
    assert run.rc != 0 and result["failed"] is True
    assert result["error_class"] == "permanent"
    assert message in result["msg"], result["msg"]
    assert instance_dirs(tmp_path / "state") == []
    assert SENTINEL not in run.stdout + run.stderr


def test_a_bad_batch_item_names_its_index_and_changes_nothing(tmp_path, local):
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "batch",
                PI: {
                    "provider": "local",
                    "instances": [
                        {
                            "uid": "good-%s" % uuid.uuid4().hex,
                            "auth": {"username": "u", "password": GOOD},
                        },
                        {
                            "uid": "bad-%s" % uuid.uuid4().hex,
                            "auth": {"username": "u:x", "password": GOOD},
                        },
                    ],
                },
            }
        ],
        module_defaults=local,
    )
    assert run.rc != 0
    assert "instances[1].auth.username: 'u:x' contains ':'" in run["batch"]["msg"]
    assert instance_dirs(tmp_path / "state") == []
