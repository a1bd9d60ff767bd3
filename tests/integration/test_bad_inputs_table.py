"""The table of bad inputs (issue 15): each one, through a real module run, fails with a short
message naming what to fix, ``error_class: permanent``, and changes nothing.

One playbook runs every row as its own task (``ignore_errors``), next to a bystander instance
that must still be running, with the same process, when the table is done. A second playbook
feeds broken providers files. Together they are more than 60 inputs.
"""

from __future__ import annotations

import json
import uuid

import pytest

from .local_env import instance_dirs
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
INFO = "crawl.egress_proxies.proxy_info"
GC = "crawl.egress_proxies.proxy_gc"
CHECK = "crawl.egress_proxies.proxy_check"
BYSTANDER = "bystander-%s" % uuid.uuid4().hex[:8]
NOTHING = "local/proxy-names-nothing"
LOCAL = {"name": "local", "type": "local"}


def _pi(**args) -> tuple:
    return (PI, dict({"provider": "local"}, **args))


# (label, (module, args), message fragment); every row must fail permanent and change nothing.
# "{id}" and "{name}" in args stand for the bystander's id and name.
MODULE_ROWS = [
    ("unknown provider", _pi(provider="nope", uid="u1"), "provider 'nope' is not configured"),
    ("no provider", (PI, {"uid": "u1"}), "provider: required"),
    ("malformed id", _pi(id="zones/a/instances/b", state="absent"), "malformed local provider id"),
    ("id with a path", _pi(id="local/../../etc", state="absent"), "malformed local provider id"),
    (
        "id with newline",
        _pi(id="local/proxy-a\nb", state="absent"),
        "id: 'local/proxy-a\\nb' contains control",
    ),
    ("huge id", _pi(id="local/" + "a" * 100_000, state="absent"), "...(100006 chars) is longer than 253"),
    ("id names nothing", _pi(id=NOTHING, uid="u-nothing"), "names no instance"),
    ("missing uid", _pi(), "uid: required when state=present"),
    ("uid dict", _pi(uid={"a": 1}), "uid: must be a string, not <dict of 1>"),
    ("uid list", _pi(uid=["a", "b"]), "uid: must be a string, not <list of 2>"),
    ("uid whitespace", _pi(uid="   "), "uid: '   ' has leading or trailing whitespace"),
    ("uid padded", _pi(uid=" u1"), "has leading or trailing whitespace"),
    ("uid NUL", _pi(uid="a\x00b"), "uid: 'a\\x00b' contains control characters"),
    ("uid tab", _pi(uid="a\tb"), "contains control characters"),
    ("uid too long", _pi(uid="u" * 300), "is longer than 253 characters"),
    ("uid int", _pi(uid=5), "uid: must be a string, not 5"),
    ("name not a label", _pi(uid="u1", name="Not_A_Label"), "name: 'Not_A_Label' is not a DNS label"),
    ("name 5 MB", _pi(uid="u1", name="n" * 5_000_000), "...(5000000 chars) is longer than 253"),
    ("name newline", _pi(uid="u1", name="a\nb"), "name: 'a\\nb' contains control characters"),
    ("namespace dict", _pi(uid="u1", namespace={"x": 1}), "namespace: must be a string"),
    ("proxy_name list", _pi(uid="u1", proxy_name=[1]), "proxy_name: must be a string"),
    (
        "cloud_init dict",
        _pi(uid="u1", cloud_init={"packages": ["x"]}),
        "cloud_init: must be a string, not <dict",
    ),
    ("port too big", _pi(uid="u1", port=70000), "port: 70000 is not a port"),
    ("port zero", _pi(uid="u1", port=0), "port: 0 is not a port"),
    ("port negative", _pi(uid="u1", port=-1), "port: -1 is not a port"),
    ("port true", _pi(uid="u1", port=True), "port: True is not a port"),
    ("port text", _pi(uid="u1", port="http"), "port"),
    ("wait_timeout nan", _pi(uid="u1", wait_timeout="nan"), "wait_timeout: 'nan' must be more than 0"),
    ("wait_timeout inf", _pi(uid="u1", wait_timeout="inf"), "wait_timeout: 'inf' must be more than 0"),
    ("wait_timeout zero", _pi(uid="u1", wait_timeout=0), "wait_timeout: 0 must be more than 0"),
    ("wait_timeout negative", _pi(uid="u1", wait_timeout=-5), "wait_timeout: -5 must be more than 0"),
    ("timeout zero", _pi(uid="u1", timeout=0), "timeout: 0 must be more than 0"),
    ("timeout negative", _pi(uid="u1", timeout=-1), "timeout: -1 must be more than 0"),
    ("timeout nan", _pi(uid="u1", timeout="nan"), "timeout: 'nan' must be more than 0"),
    ("timeout true", _pi(uid="u1", timeout=True), "timeout: True is not a number of seconds"),
    ("timeout over a day", _pi(uid="u1", timeout=10**9), "at most 86400 seconds"),
    ("concurrency zero", _pi(uid="u1", concurrency=0), "concurrency: 0 must be a whole number from 1 to 256"),
    ("concurrency negative", _pi(uid="u1", concurrency=-3), "concurrency: -3 must be a whole number"),
    ("concurrency absurd", _pi(uid="u1", concurrency=100_000), "concurrency: 100000 must be a whole number"),
    ("state unknown", _pi(uid="u1", state="gone"), "state"),
    ("unknown option", _pi(uid="u1", colour="red"), "colour"),
    ("placement not a dict", _pi(uid="u1", placement="eu"), "dictionary requested"),
    ("placement unknown key", _pi(uid="u1", placement={"colour": "red"}), "colour"),
    ("force not a bool", _pi(uid="u1", force="maybe", state="absent"), "force"),
    ("absent names nothing", _pi(state="absent"), "one of id, name or uid is required"),
    ("empty batch", _pi(instances=[]), "instances: must hold at least one item"),
    (
        "good item then a malformed id",
        _pi(instances=[{"uid": "good-%s" % uuid.uuid4().hex[:6]}, {"id": "../../etc", "state": "absent"}]),
        "instances[1].id: malformed local provider id",
    ),
    ("duplicate uids", _pi(instances=[{"uid": "dup"}, {"uid": "dup"}]), "instances[1]: repeats another item"),
    (
        "present and absent of one uid",
        _pi(instances=[{"uid": "x1"}, {"uid": "x1", "state": "absent"}]),
        "instances[0]: contradicts another item",
    ),
    (
        "one id twice",
        _pi(state="absent", instances=[{"id": "local/proxy-a"}, {"id": "local/proxy-a"}]),
        "repeats another item",
    ),
    (
        "batch uid dict",
        _pi(instances=[{"uid": "ok"}, {"uid": {"a": 1}}]),
        "instances[1].uid: must be a string",
    ),
    (
        "batch port true",
        _pi(instances=[{"uid": "ok", "port": True}]),
        "instances[0].port: True is not a port",
    ),
    (
        "batch wait_timeout nan",
        _pi(instances=[{"uid": "ok", "wait_timeout": "nan"}]),
        "instances[0].wait_timeout",
    ),
    (
        "batch bad name",
        _pi(instances=[{"uid": "ok"}, {"uid": "ok2", "name": "Bad"}]),
        "instances[1].name: 'Bad'",
    ),
    ("batch no provider", (PI, {"instances": [{"uid": "ok"}]}), "instances[0].provider: required"),
    ("another owner's id", _pi(id="{id}", uid="not-the-owner", state="absent"), "belongs to uid"),
    ("another owner's name", _pi(name="{name}", uid="not-the-owner", state="absent"), "belongs to uid"),
    ("adopt another owner's name", _pi(name="{name}", uid="not-the-owner"), "belongs to uid"),
    ("installation not a label", _pi(uid="u1", installation="Bad_Label"), "installation"),
    (
        "inline stateDir relative",
        _pi(uid="u1", providers=[dict(LOCAL, local={"stateDir": "rel"})]),
        "stateDir",
    ),
    (
        "inline unknown type",
        _pi(uid="u1", providers=[{"name": "local", "type": "lokal"}]),
        "unknown provider type",
    ),
    ("inline duplicate names", _pi(uid="u1", providers=[LOCAL, LOCAL]), "providers[1].name: duplicate"),
    ("inline NUL stateDir", _pi(uid="u1", providers=[dict(LOCAL, local={"stateDir": "/a\x00b"})]), "NUL"),
    ("ids without provider", (INFO, {"ids": ["local/proxy-a"]}), "provider: required with ids"),
    ("info unknown provider", (INFO, {"provider": "nope"}), "provider 'nope' is not configured"),
    ("info timeout zero", (INFO, {"timeout": 0}), "timeout: 0 must be more than 0"),
    ("info concurrency zero", (INFO, {"concurrency": 0}), "concurrency: 0"),
    ("gc without live uids", (GC, {}), "live_uids: required"),
    ("gc empty live uid", (GC, {"live_uids": [""], "min_age": "0"}), "live_uids[0]: must not be empty"),
    (
        "gc whitespace live uid",
        (GC, {"live_uids": ["ok", " "], "min_age": "0"}),
        "live_uids[1]: ' ' has leading",
    ),
    ("gc bad min_age", (GC, {"live_uids": [], "min_age": "soon"}), "min_age: 'soon' is not a duration"),
    ("gc timeout nan", (GC, {"live_uids": [], "timeout": "nan"}), "timeout: 'nan'"),
    ("gc concurrency zero", (GC, {"live_uids": [], "concurrency": 0}), "concurrency: 0"),
    ("gc live_uids and cluster", (GC, {"live_uids": [], "in_cluster": True}), "mutually exclusive"),
    ("check timeout -1", (CHECK, {"timeout": -1}), "timeout: -1 must be more than 0"),
    ("check timeout zero", (CHECK, {"timeout": 0}), "timeout: 0 must be more than 0"),
    ("check unknown provider", (CHECK, {"provider": "nope"}), "provider 'nope' is not configured"),
]


def _task(label: str, module: str, args: dict, bystander: dict) -> dict:
    text = json.dumps(args).replace("{id}", bystander["id"]).replace("{name}", bystander["name"])
    return {"name": label, module: json.loads(text), "ignore_errors": True}


def _assert_none_wrong(wrong: dict) -> None:
    bad = [label for label, why in wrong.items() if why]
    assert not bad, "%d of %d rows wrong:\n%s" % (
        len(bad),
        len(wrong),
        "\n".join("%s: %s" % (label, wrong[label][:200]) for label in bad),
    )


def _result(run, label: str) -> dict:
    return run.tasks.get(label, {"msg": "no result: the play stopped before this task"})


def _wrong(result: dict, fragment: str) -> str:
    """What is wrong with a row's result, or ``""`` when it was refused as it should be."""
    msg = str(result.get("msg", ""))
    checks = [
        (result.get("failed") is True, "did not fail"),
        (result.get("error_class") == "permanent", "error_class %r" % result.get("error_class")),
        (fragment in msg, "message lacks %r" % fragment),
        (len(msg) < 2000, "message of %d characters" % len(msg)),
        (result.get("changed") is not True, "changed"),
        (not result.get("deleted") and not result.get("would_delete"), "deleted something"),
    ]
    problems = [why for ok, why in checks if not ok]
    return "; ".join(problems) + (": %s" % msg[:300] if problems else "")


def test_every_bad_module_input_is_refused_and_changes_nothing(tmp_path, local):
    run = run_playbook(
        tmp_path, [{"name": "bystander", PI: {"provider": "local", "uid": BYSTANDER}}], module_defaults=local
    )
    assert run.rc == 0, run.stdout[-3000:]
    bystander = run["bystander"]["instance"]
    pid_file = tmp_path / "state" / "instances" / bystander["name"] / "process.json"
    pid_before = json.loads(pid_file.read_text())["pid"]

    tasks = [_task(label, module, args, bystander) for label, (module, args), _fragment in MODULE_ROWS]
    run = run_playbook(tmp_path, tasks, module_defaults=local)
    wrong = {label: _wrong(_result(run, label), fragment) for label, _call, fragment in MODULE_ROWS}
    _assert_none_wrong(wrong)

    assert instance_dirs(tmp_path / "state") == [bystander["name"]], "only the bystander exists"
    assert json.loads(pid_file.read_text())["pid"] == pid_before, "the bystander's Squid is the same process"


BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    "%s: &%s [%s]\n" % (c, c, ",".join(["*" + p] * 9)) for p, c in zip("abcde", "bcdef", strict=True)
)

FILE_ROWS = [
    ("missing file", None, "cannot read providers file"),
    ("not UTF-8", b"providers:\n  - name: caf\xe9\n", "not UTF-8: byte 0xe9 at line 2"),
    ("deep nesting", "providers: " + "[" * 20000, "nested deeper than 32 levels"),
    ("alias bomb", BOMB + "providers:\n  - {name: local, type: *f}\n", "expands to more than 100000 values"),
    ("duplicate key", "providers: []\nproviders: []\n", "duplicate key 'providers' at line 2"),
    ("duplicate name key", "providers:\n  - {name: a, name: b, type: local}\n", "duplicate key 'name'"),
    ("too large", "providers: []\n" + "#" * (2 * 1024 * 1024), "larger than 1048576 bytes"),
    ("not YAML", "providers: [\n", "not valid YAML"),
    ("root a list", "- name: local\n", "<root>: must be a mapping"),
    ("empty file", "", "providers: must be a list"),
    ("huge name", "providers:\n  - {name: %s, type: local}\n" % ("n" * 200_000), "(200000 chars)"),
    (
        "stateDir a file",
        "providers:\n  - {name: l, type: local, local: {stateDir: /etc/hostname}}\n",
        "not a directory",
    ),
    (
        "overlapping ranges",
        "providers:\n"
        "  - {name: a, type: local, local: {stateDir: /srv/a, addressRange: 127.80.0.0/16}}\n"
        "  - {name: b, type: local, local: {stateDir: /srv/b, addressRange: 127.80.1.0/24}}\n",
        "overlaps 127.80.0.0/16 of providers[0] (a)",
    ),
]


def test_every_bad_providers_file_is_refused(tmp_path):
    tasks = []
    for index, (label, content, _fragment) in enumerate(FILE_ROWS):
        path = tmp_path / ("providers-%d.yaml" % index)
        if content is not None:
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        tasks.append({"name": label, INFO: {"providers_file": str(path)}, "ignore_errors": True})
    run = run_playbook(tmp_path, tasks)
    wrong = {}
    for index, (label, _content, fragment) in enumerate(FILE_ROWS):
        result = _result(run, label)
        why = _wrong(result, fragment)
        if not why and str(tmp_path / ("providers-%d.yaml" % index)) not in result["msg"]:
            why = "no path in %s" % result["msg"][:300]
        if not why and not result.get("problems"):
            why = "no problems list"
        wrong[label] = why
    _assert_none_wrong(wrong)


def test_the_table_holds_at_least_sixty_inputs():
    assert len(MODULE_ROWS) + len(FILE_ROWS) >= 60
    assert len({label for label, _c, _f in MODULE_ROWS + FILE_ROWS}) == len(MODULE_ROWS) + len(FILE_ROWS)
