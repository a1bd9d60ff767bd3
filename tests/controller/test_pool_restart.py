"""What a pool decides comes from the objects, not from the controller's memory (issue 30): a
controller started afresh (a restart, or another replica taking over) over what an earlier one
wrote writes nothing when nothing changed, puts back a published object edited or deleted by
hand (and so does the same controller at the pool's next tick), keeps the credentials copies that
exist and makes again one whose content drifted, and does not repeat a problem's Event."""

from __future__ import annotations

import base64
import copy

import pytest
from egress_proxies_controller.kube import conditions
from egress_proxies_controller.pool.auth import PoolAuth
from egress_proxies_controller.proxy import auth_secret

from .pool_fakes import controller, make_ready, pool_obj, real_publisher, tick


def auth_pool() -> dict:
    obj = pool_obj()
    obj["spec"]["template"]["auth"] = {"secretRef": {"name": "creds"}}
    return obj


def publishing(obj: dict, secrets=None):
    """A controller with the real Publisher, its pool settled: members Ready and published."""
    ctl = controller()
    ctl.publisher = real_publisher(ctl)
    ctl.pools.secrets.update(secrets or {})
    ctl.informer.apply_event("MODIFIED", obj)
    for _round in range(3):
        tick(ctl)
        make_ready(ctl)
    tick(ctl)
    return ctl


def restarted(old):
    """A controller started afresh over what ``old`` left on the API: the same API objects,
    the pools, members and published objects listed again by its informers, nothing else of
    ``old``'s."""
    ctl = controller()
    ctl.pools = old.pools
    ctl.pools.proxies, ctl.pools.published = ctl.proxies, ctl.published
    ctl.publisher, ctl.auth = real_publisher(ctl), PoolAuth(ctl.pools)
    for kind, informer in ctl.published.items():
        for obj in ctl.pools.others.get(kind, {}).values():
            informer.apply_event("ADDED", copy.deepcopy(obj))
    for obj in old.proxies.cache.values():
        ctl.proxies.apply_event("MODIFIED", obj)
    for obj in old.informer.cache.values():
        ctl.informer.apply_event("MODIFIED", obj)
    return ctl


def status_writes(ctl) -> list:
    written, write = [], ctl.pools.write_status

    def counted(obj, status):
        written.append(status)
        return write(obj, status)

    ctl.pools.write_status = counted
    return written


def text(ctl) -> str:
    return base64.b64decode(ctl.pools.secrets["web-endpoints"]["data"]["proxies.txt"]).decode()


def b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


CREDS = {"creds": {"credentials": ("crawler", "pass")}}


def test_a_restarted_controller_writes_nothing_when_nothing_changed():
    old = publishing(auth_pool(), CREDS)
    assert {w[1] for w in old.pools.writes} == {"Secret", "Service", "EndpointSlice"}
    members = len(old.pools.created)
    ctl = restarted(old)
    ctl.pools.writes.clear()
    statuses = status_writes(ctl)
    tick(ctl)
    tick(ctl)
    assert ctl.pools.writes == [] and ctl.pools.secrets_deleted == []
    assert statuses == [] and ctl.events == []
    assert len(ctl.pools.created) == members and ctl.pools.deleted == []


@pytest.mark.parametrize("fresh", [False, True], ids=["same-controller", "restarted"])
def test_a_published_object_edited_or_deleted_by_hand_is_put_back_at_the_pools_next_tick(fresh):
    ctl = publishing(pool_obj())
    published = text(ctl)
    assert published.count("http://") == 3
    edited = ctl.pools.secrets["web-endpoints"]
    edited["data"] = dict(edited["data"], **{"proxies.txt": b64("http://10.9.9.9:3128\n")})
    ctl.pools.by_hand(ctl.pools.others["Service"]["web"], "DELETED")
    ctl.pools.by_hand(ctl.pools.others["EndpointSlice"]["web"], "DELETED")
    if fresh:
        ctl = restarted(ctl)
    ctl.pools.writes.clear()
    tick(ctl)
    assert sorted(ctl.pools.writes) == [
        ("create", "EndpointSlice", "web"),
        ("create", "Service", "web"),
        ("replace", "Secret", "web-endpoints"),
    ]
    assert text(ctl) == published
    ctl.pools.writes.clear()
    tick(ctl)
    assert ctl.pools.writes == []


def settled(ctl) -> None:
    """The round the published objects' own events bring writes nothing."""
    ctl.pools.writes.clear()
    ctl.round()
    assert ctl.pools.writes == []


def test_a_service_or_endpointslice_deleted_or_edited_by_hand_is_put_back_at_once():
    """Their watch brings the pool round with no resync: the rounds below do not move the
    queue's clock, so only the event can have queued the pool."""
    ctl = publishing(pool_obj())
    settled(ctl)
    ctl.pools.by_hand(ctl.pools.others["Service"]["web"], "DELETED")
    ctl.round()
    assert ctl.pools.writes == [("create", "Service", "web")]
    edited = copy.deepcopy(ctl.pools.others["EndpointSlice"]["web"])
    good = edited["endpoints"]
    edited["endpoints"] = [*good, {"addresses": ["10.9.9.9"], "conditions": {"ready": True}}]
    edited["metadata"]["resourceVersion"] = "by-hand-7"
    ctl.pools.writes.clear()
    ctl.pools.by_hand(edited)
    ctl.round()
    assert ctl.pools.writes == [("replace", "EndpointSlice", "web")]
    assert ctl.pools.others["EndpointSlice"]["web"]["endpoints"] == good
    settled(ctl)  # our write came back through the watch: nothing to do


def test_an_object_no_pool_controls_brings_no_pool_round():
    ctl = publishing(pool_obj())
    settled(ctl)
    informer = ctl.published["Service"]
    stray = {"metadata": {"name": "other", "namespace": "ns", "labels": {"crawl.example.com/pool": "web"}}}
    informer.apply_event("ADDED", stray)
    informer.apply_event("DELETED", stray)
    theirs = copy.deepcopy(stray)
    theirs["metadata"]["ownerReferences"] = [
        {"kind": "Deployment", "name": "web", "uid": "d", "controller": True}
    ]
    informer.apply_event("ADDED", theirs)
    informer.apply_event("DELETED", theirs)
    ctl.round()
    assert ctl.pools.writes == []


@pytest.mark.parametrize("fresh", [False, True], ids=["same-controller", "restarted"])
def test_an_auth_copy_whose_content_drifted_is_made_again(fresh):
    """A copy is immutable, so only a delete and a create by hand changes it: its content is read
    back, not remembered, and a copy that does not hold the auth Secret's credentials is deleted
    (its UID as a precondition) and made again; the members naming it stay."""
    ctl = publishing(auth_pool(), CREDS)
    (name,) = ctl.informer.get("ns/web")["status"]["authSecrets"]
    members = len(ctl.pools.created)
    drifted = ctl.pools.secrets[name]
    drifted["data"] = {"username": b64("crawler"), "password": b64("by-hand")}
    drifted["metadata"]["uid"] = "by-hand"
    if fresh:
        ctl = restarted(ctl)
    ctl.pools.writes.clear()
    tick(ctl)
    assert ctl.pools.secrets_deleted == [name]
    assert ("create", "Secret", name) in ctl.pools.writes
    assert base64.b64decode(ctl.pools.secrets[name]["data"]["password"]).decode() == "pass"
    assert len(ctl.pools.created) == members and ctl.pools.deleted == []
    assert text(ctl).count("http://crawler:pass@") == 3


def foreign_endpoints() -> dict:
    return {"web-endpoints": {"metadata": {"name": "web-endpoints", "uid": "x", "resourceVersion": "1"}}}


@pytest.mark.parametrize(
    "obj, secrets, problem",
    [
        (
            pool_obj(),
            foreign_endpoints(),
            "Secret web-endpoints exists and is not this pool's: left as it is",
        ),
        (
            auth_pool(),
            {},
            "members not changed: auth Secret ns/creds: Not Found; " + auth_secret.needs("ns", "creds"),
        ),
    ],
    ids=["publication", "auth-secret"],
)
def test_a_problem_reported_once_is_not_reported_again_after_a_restart(obj, secrets, problem):
    ctl = publishing(obj, secrets)
    assert ctl.events.count("PublishFailed") == 1
    ctl = restarted(ctl)
    tick(ctl)
    tick(ctl)
    assert "PublishFailed" not in ctl.events
    published = conditions.find(ctl.informer.get("ns/web")["status"]["conditions"], "Published")
    assert (published["status"], published["reason"]) == ("False", "PublishFailed")
    assert published["message"] == problem


def test_a_problem_changed_or_back_after_a_fix_is_reported_again():
    ctl = publishing(auth_pool())
    assert ctl.events.count("PublishFailed") == 1
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "bad\npass")}
    tick(ctl)
    assert ctl.events.count("PublishFailed") == 2
    ctl.pools.secrets.update(CREDS)
    tick(ctl)
    published = conditions.find(ctl.informer.get("ns/web")["status"]["conditions"], "Published")
    assert (published["status"], published["reason"]) == ("True", "Published")
    del ctl.pools.secrets["creds"]
    tick(ctl)
    assert ctl.events.count("PublishFailed") == 3


def test_a_problem_is_told_at_the_tick_that_records_it_in_the_status():
    """A status write that fails (the pool changed meanwhile) records nothing, so nothing is
    told: the next tick, which records it, tells it once."""
    ctl = controller()
    ctl.publisher = real_publisher(ctl)
    ctl.informer.apply_event("MODIFIED", auth_pool())
    write = ctl.pools.write_status
    ctl.pools.write_status = lambda _obj, _status: None
    tick(ctl)
    assert "PublishFailed" not in ctl.events
    ctl.pools.write_status = write
    tick(ctl)
    tick(ctl)
    assert ctl.events.count("PublishFailed") == 1
