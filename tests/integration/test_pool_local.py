"""``proxy_pool`` through real ``ansible-playbook`` runs on two local providers (real Squid).

One pool of weights 2:1 is taken through the life the issue asks for: converge 6 (4 and 2),
a re-run that changes nothing, scale to 3 (every member is Running, so each target's oldest
go), a check-mode run of 8 that touches nothing, 8 (5 and 3, in the slots check mode named),
and ``state: absent``. Beside it live an instance of another pool, a plain proxy_instance, a
lookalike of a member in another installation and an unmarked instance directory: no run
counts, keeps or deletes them.
"""

from __future__ import annotations

import json
import uuid

import pytest
from contract.local_backend import random_loopback_range
from proxy_traffic import fetch_via, origin_server

from .local_env import instance_dirs, squid_pids
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PP = "crawl.egress_proxies.proxy_pool"
PI = "crawl.egress_proxies.proxy_instance"


def _ranges(n: int) -> list:
    out = []
    while len(out) < n:
        candidate = random_loopback_range()
        if candidate not in out:
            out.append(candidate)
    return out


@pytest.fixture
def two_locals(tmp_path):
    """Module defaults for two throwaway local providers ``a`` and ``b``; whatever this
    installation left is deleted at teardown by id (and asserted gone)."""
    range_a, range_b = _ranges(2)
    defaults = {
        "providers": [
            {
                "name": "a",
                "type": "local",
                "local": {"stateDir": str(tmp_path / "a"), "addressRange": range_a},
            },
            {
                "name": "b",
                "type": "local",
                "local": {"stateDir": str(tmp_path / "b"), "addressRange": range_b},
            },
        ],
        "installation": "it-%s" % uuid.uuid4().hex[:8],
    }
    yield defaults
    tasks = []
    for provider in ("a", "b"):
        left = instance_dirs(tmp_path / provider)
        for installation in (defaults["installation"], "elsewhere") if left else ():
            tasks.append(
                {
                    "name": "cleanup %s %s" % (provider, installation),
                    PI: {
                        "provider": provider,
                        "installation": installation,
                        "state": "absent",
                        "force": True,
                        "instances": [{"id": "local/%s" % n} for n in left],
                    },
                    "ignore_errors": True,
                }
            )
    if tasks:
        run_playbook(tmp_path, tasks, module_defaults={"providers": defaults["providers"]})
    for provider in ("a", "b"):
        assert squid_pids(tmp_path / provider) == [], "Squid left running"


SPREAD = [{"provider": "a", "weight": 2}, {"provider": "b", "weight": 1}]


def _pool(count, name="web", **extra) -> dict:
    args = {"pool": name, "spread": SPREAD}
    if count is not None:
        args["count"] = count
    args.update(extra)
    return args


def _task(name: str, args: dict, **extra) -> dict:
    return dict({"name": name, PP: args}, **extra)


def _split(result: dict) -> dict:
    counts = {}
    for member in result["members"]:
        counts[member["provider"]] = counts.get(member["provider"], 0) + 1
    return counts


def _names(result: dict) -> list:
    return [m["name"] for m in result["members"]]


def _keys(refs: list) -> list:
    """``(provider, name)`` of ``members``, ``created`` or ``deleted`` (all keyed by both), sorted."""
    return sorted((r["provider"], r["name"]) for r in refs)


def test_a_pool_converges_scales_and_goes_without_touching_others(tmp_path, two_locals):
    other_installation = dict(two_locals, installation="elsewhere")
    setup = run_playbook(
        tmp_path,
        [
            _task("other pool", _pool(1, name="other", spread=[{"provider": "a"}])),
            {"name": "plain", PI: {"provider": "a", "uid": "not-a-pool-member"}},
        ],
        module_defaults=two_locals,
    )
    assert setup.rc == 0, setup.stdout[-3000:]
    # A lookalike of a member in another installation: this pool's uid, another name.
    foreign = run_playbook(
        tmp_path,
        [{"name": "foreign", PI: {"provider": "b", "uid": "pool_web_b_0", "name": "web-x"}}],
        module_defaults=other_installation,
    )
    assert foreign.rc == 0, foreign.stdout[-3000:]
    handmade = tmp_path / "a" / "instances" / "web-9"
    handmade.mkdir(parents=True)
    (handmade / "instance.json").write_text(json.dumps({"name": "web-9", "address": "127.0.0.9", "port": 1}))
    bystanders = {"a": {"other-0", setup["plain"]["instance"]["name"], "web-9"}, "b": {"web-x"}}

    run = run_playbook(
        tmp_path,
        [
            _task("converge 6", _pool(6, wait=True)),
            _task("again", _pool(6)),
        ],
        module_defaults=two_locals,
    )
    assert run.rc == 0, run.stdout[-3000:]
    six = run["converge 6"]
    assert six["changed"] is True
    assert _split(six) == {"a": 4, "b": 2}
    assert _keys(six["created"]) == _keys(six["members"])
    assert {m["state"] for m in six["members"]} == {"Running"}
    assert [t["desired"] for t in six["targets"]] == [4, 2]
    with origin_server() as origin:  # every member is a real Squid that forwards
        for member in six["members"]:
            assert fetch_via(member["ip"], 3128, origin) == (200, "hello /via-proxy"), member
    again = run["again"]
    assert again["changed"] is False
    assert again["created"] == [] and again["deleted"] == []
    assert _names(again) == _names(six)

    oldest_first = sorted(six["members"], key=lambda m: m["created_at"])
    down = run_playbook(tmp_path, [_task("to 3", _pool(3, wait=True))], module_defaults=two_locals)
    assert down.rc == 0, down.stdout[-3000:]
    three = down["to 3"]
    assert _split(three) == {"a": 2, "b": 1}
    # Each target keeps its newest Running members: its oldest go.
    for provider, keep in (("a", 2), ("b", 1)):
        mine = [m["name"] for m in oldest_first if m["provider"] == provider]
        assert sorted(m["name"] for m in three["members"] if m["provider"] == provider) == sorted(
            mine[-keep:]
        )
        assert set(mine[:-keep]) <= {r["name"] for r in three["deleted"] if r["provider"] == provider}
    assert len(three["deleted"]) == 3

    check = run_playbook(
        tmp_path, [_task("check 8", _pool(8))], module_defaults=two_locals, check=True, diff=True
    )
    assert check.rc == 0, check.stdout[-3000:]
    would = check["check 8"]
    assert would["changed"] is True and len(would["created"]) == 5 and would["deleted"] == []
    assert would["diff"]["before"]["members"] == _names(three)
    assert len(would["diff"]["after"]["members"]) == 8
    assert sorted(instance_dirs(tmp_path / "a")) == sorted(
        bystanders["a"] | {m["name"] for m in three["members"] if m["provider"] == "a"}
    )

    up = run_playbook(tmp_path, [_task("to 8", _pool(8, wait=True))], module_defaults=two_locals, diff=True)
    assert up.rc == 0, up.stdout[-3000:]
    eight = up["to 8"]
    assert _split(eight) == {"a": 5, "b": 3}
    assert _keys(eight["created"]) == _keys(would["created"])  # the same free slots check mode named
    assert all(r["id"] for r in eight["created"])
    assert set(_names(three)) <= set(_names(eight))
    assert sorted(m["slot"] for m in eight["members"]) == list(range(8))

    gone = run_playbook(
        tmp_path, [_task("absent", _pool(None, state="absent", wait=True))], module_defaults=two_locals
    )
    assert gone.rc == 0, gone.stdout[-3000:]
    assert _keys(gone["absent"]["deleted"]) == _keys(eight["members"])
    assert gone["absent"]["members"] == []
    for provider in ("a", "b"):
        assert set(instance_dirs(tmp_path / provider)) == bystanders[provider]
    (handmade / "instance.json").unlink()
    handmade.rmdir()


def test_a_target_out_of_addresses_gives_its_share_to_the_other(tmp_path, two_locals):
    """Provider ``b`` has two addresses (a /30): its share of 3 (weights 1:1) is cut to those two
    before any create (issue 28 §7: a third create used to be tried and fail quota_exceeded), so
    ``b`` is reported skipped with its two members and ``a`` takes the rest; the task succeeds,
    says so, and a re-run changes nothing. The template's credentials never reach the output."""
    two_locals["providers"][1]["local"]["addressRange"] = random_loopback_range().replace(".0/24", ".0/30")
    secret = "pw-%s" % uuid.uuid4().hex
    spread = [{"provider": "a"}, {"provider": "b"}]
    args = _pool(6, spread=spread, auth={"username": "crawler", "password": secret}, wait=True)
    run = run_playbook(
        tmp_path, [_task("converge", args), _task("again", args)], module_defaults=two_locals, verbosity=3
    )
    assert run.rc == 0, run.stdout[-3000:]
    first = run["converge"]
    assert _split(first) == {"a": 4, "b": 2}
    assert [(d["target"], d["error_class"]) for d in first["degraded"]] == [("b", "quota_exceeded")]
    assert "a share of 3 is more than provider b can ever hold" in first["degraded"][0]["msg"]
    assert "it holds at most 2" in first["degraded"][0]["msg"]
    assert first["failures"] == [], "no create was tried past the range"
    by_target = {t["name"]: t for t in first["targets"]}
    assert by_target["b"]["degraded"] is True and by_target["b"]["desired"] == 2
    assert by_target["a"]["degraded"] is False and by_target["a"]["desired"] == 4
    assert any("target b (provider b) skipped" in w for w in first.get("warnings", []))
    again = run["again"]
    assert again["changed"] is False and again["created"] == [] and again["deleted"] == []
    assert _names(again) == _names(first)
    assert secret not in run.stdout + run.stderr
    with origin_server() as origin:
        for member in first["members"]:
            assert fetch_via(member["ip"], 3128, origin)[0] == 407, member
            assert fetch_via(member["ip"], 3128, origin, credentials=("crawler", secret))[0] == 200, member
    gone = run_playbook(
        tmp_path, [_task("absent", _pool(None, state="absent", spread=spread))], module_defaults=two_locals
    )
    assert gone.rc == 0, gone.stdout[-3000:]
    assert len(gone["absent"]["deleted"]) == 6
    assert instance_dirs(tmp_path / "a") == [] and instance_dirs(tmp_path / "b") == []


BAD = [
    ({"count": -1}, "count: -1 must be a whole number from 0 to 10000"),
    ({"count": True}, "count: True must be a whole number"),
    ({"count": None}, "count: required when state=present"),
    ({"pool": "Web_1"}, "pool: 'Web_1' is not a DNS label"),
    (
        {"spread": [{"provider": "a"}, {"provider": "nowhere"}]},
        "spread[1].provider: provider 'nowhere' is not configured",
    ),
    ({"spread": [{"provider": "a", "weight": -2}]}, "spread[0].weight: -2 must be a whole number from 0"),
    ({"spread": [{"provider": "a", "max": -1}]}, "spread[0].max: -1 must be a whole number from 0"),
    ({"spread": [{"provider": "a"}, {"provider": "a"}]}, "spread[1].name: 'a' repeats spread[0]"),
    (
        {"spread": [{"provider": "a"}, {"name": "a2", "provider": "a"}]},
        "spread[1]: same provider and placement as spread[0]",
    ),
    (
        {"spread": [{"provider": "a", "weight": 0}, {"provider": "b", "weight": 0}]},
        "spread: every weight is 0",
    ),
    (
        {"spread": [{"provider": "a", "max": 2}, {"provider": "b", "max": 1}]},
        "count: 6 is more than the spread can hold",
    ),
    ({"spread": []}, "spread: must be a list of at least one target"),
    ({"port": 0}, "port: 0 is not a port"),
    ({"auth": {"username": "a:b", "password": "pw-secret-2"}}, "auth.username"),
    ({"provider": "a"}, "parameters are mutually exclusive: provider|spread"),
]


def test_bad_input_is_refused_naming_the_field_and_changes_nothing(tmp_path, two_locals):
    tasks = []
    for index, (override, _fragment) in enumerate(BAD):
        args = _pool(6)
        args.update(override)
        tasks.append(
            _task("bad %d" % index, {k: v for k, v in args.items() if v is not None}, ignore_errors=True)
        )
    run = run_playbook(tmp_path, tasks, module_defaults=two_locals)
    for index, (_override, fragment) in enumerate(BAD):
        result = run["bad %d" % index]
        assert result.get("failed") is True, (index, result)
        assert result["error_class"] == "permanent", (index, result)
        assert fragment in result["msg"], (index, result["msg"])
    assert "pw-secret-2" not in run.stdout
    assert instance_dirs(tmp_path / "a") == [] and instance_dirs(tmp_path / "b") == []
