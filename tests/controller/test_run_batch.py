"""runs/batch.py: a batch's payload and its answers, with no process (issue 30: the runner
process apart from the pure encoding and decoding of a batch)."""

from __future__ import annotations

import pytest
from egress_proxies_controller.proxy.model import NOT_FOUND, PERMANENT, TRANSIENT, Action, Answer
from egress_proxies_controller.runs import batch


def act(op, provider="local", provider_id="", name="proxy-a", uid="u-a") -> Action:
    return Action(op=op, phase="x", provider=provider, provider_id=provider_id, name=name, uid=uid)


def test_creates_and_deletes_are_one_instances_task_and_gets_group_by_provider():
    actions = {
        "ns/a": act("create"),
        "ns/b": act("delete", name="proxy-b", uid="u-b"),
        "ns/c": act("delete", provider_id="local/c"),
        "ns/d": act("get", provider_id="local/d"),
        "ns/e": act("get", provider="gcp", provider_id="g/e"),
    }
    items = batch.encode(actions, {"ns/a": {"port": 3128}}, list_threshold=10)
    assert items.instance_keys == ["ns/a", "ns/b", "ns/c"]
    assert items.instances[0] == {
        "provider": "local",
        "uid": "u-a",
        "name": "proxy-a",
        "state": "present",
        "port": 3128,
    }
    assert items.instances[1]["namespace"] == "ns" and "id" not in items.instances[1]  # found by name
    assert items.instances[2]["id"] == "local/c" and "namespace" not in items.instances[2]
    assert items.gets == {"local": [("ns/d", "local/d")], "gcp": [("ns/e", "g/e")]} and items.lists == []


def test_a_create_whose_inputs_could_not_be_read_is_answered_without_a_run():
    missing = LookupError("Secret ns/s: not found")
    items = batch.encode({"ns/a": act("create")}, {"ns/a": missing}, list_threshold=10)
    assert items.empty and items.answers["ns/a"].error_class == TRANSIENT


def test_many_gets_of_one_provider_are_one_list():
    actions = {"ns/%d" % i: act("get", provider_id="local/%d" % i) for i in range(3)}
    items = batch.encode(actions, {}, list_threshold=3)
    assert items.lists == ["local"] and items.by_id == {}
    payload = batch.payload(items.instances, items.by_id, items.lists, 4, 30.0)
    assert (payload["gets"], payload["lists"], payload["concurrency"]) == ([], ["local"], 4)


NO_RESULT = "proxy_info returned no result for provider local"


def get_result(**res) -> dict:
    return {"results": [{"item": {"provider": "local"}, **res}]}


@pytest.mark.parametrize(
    ("res", "expect"),
    [
        (
            get_result(instances=[{"id": "i1", "state": "Running"}]),
            Answer(ok=True, instance={"id": "i1", "state": "Running"}),
        ),
        (get_result(not_found=["i1"]), Answer(ok=False, error_class=NOT_FOUND, message="i1 not found")),
        (
            get_result(errors=[{"id": "i1", "error_class": PERMANENT, "msg": "no"}]),
            Answer(ok=False, error_class=PERMANENT, message="no"),
        ),
        (get_result(), Answer(ok=False, error_class=TRANSIENT, message="no answer for i1")),
        (
            {"results": []},
            Answer(
                ok=False, error_class=TRANSIENT, message="proxy_info returned no result for provider local"
            ),
        ),
        (
            get_result(failed=True, msg="bad file", problems=["x"]),
            Answer(ok=False, error_class=TRANSIENT, message="bad file"),
        ),
    ],
)
def test_each_get_is_answered_from_its_providers_result(res, expect):
    answers = {}
    batch.read_gets(res, {"local": [("ns/a", "i1")]}, answers)
    assert answers == {"ns/a": expect}


def test_an_id_missing_from_a_list_is_left_for_a_get():
    answers = {}
    res = {"results": [{"item": "local", "instances": [{"id": "i1"}]}]}
    misses = batch.read_lists(res, {"local": [("ns/a", "i1"), ("ns/b", "i2")]}, answers)
    assert answers == {"ns/a": Answer(ok=True, instance={"id": "i1"})} and misses == {
        "local": [("ns/b", "i2")]
    }


def test_instance_results_that_do_not_match_the_items_fail_every_item():
    answers = {}
    batch.read_instances(
        {"results": [{}], "msg": "short", "error_class": PERMANENT}, ["ns/a", "ns/b"], answers
    )
    assert {a.error_class for a in answers.values()} == {PERMANENT} and len(answers) == 2
