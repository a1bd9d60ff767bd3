"""ReplicaSet-style expectations in the pool loop (issue 30): the loop never writes into the
Proxy informer's cache; a pool whose own creates or deletes its watch has not shown yet is not
planned again (it would repeat them), until their events arrive or the expectations expire."""

from __future__ import annotations

import types

import pytest
from egress_proxies_controller.pool import controller as pool_reconciler
from egress_proxies_controller.pool.expectations import Expectations
from kubernetes import client as k8s

from .pool_fakes import controller, make_ready, pool_obj, tick


def member(name: str, uid: str = "u1", **meta) -> dict:
    return {"metadata": {"namespace": "ns", "name": name, "uid": uid, **meta}}


def started(replicas: int = 3):
    ctl = controller()
    ctl.informer.apply_event("MODIFIED", pool_obj(replicas=replicas))
    return ctl


def test_the_pool_loop_writes_no_member_into_the_proxy_cache():
    ctl = started()
    ctl.pools.held = True
    ctl.round()
    assert len(ctl.pools.created) == 3
    assert ctl.proxies.cache == {}  # only the watch (held here) puts members there


def test_a_pool_whose_creates_are_not_seen_yet_is_not_planned_again():
    ctl = started()
    ctl.pools.held = True
    ctl.round()
    tick(ctl)  # its resync comes: the cache still lacks the three members
    tick(ctl)
    assert len(ctl.pools.created) == 3
    ctl.pools.deliver()
    tick(ctl)
    assert len(ctl.pools.created) == 3 and not ctl.expectations._pending


def test_the_watch_events_bring_the_pool_round_at_once():
    ctl = started()
    ctl.pools.held = True
    ctl.round()
    ctl.pools.deliver()
    assert "ns/web" in ctl.due.pop_due(10, 0.0)


def test_a_lost_watch_event_holds_the_pool_only_until_the_expectations_expire():
    ctl = started()
    ctl.pools.held = True
    ctl.round()
    ctl.queue_clock.now += ctl.expectations.ttl - 1
    ctl.round()
    assert len(ctl.pools.created) == 3
    ctl.queue_clock.now += 1
    ctl.round()
    assert len(ctl.pools.created) == 6  # the cache is trusted again: it shows none


def test_a_delete_is_expected_until_the_member_is_seen_deleting():
    ctl = started(replicas=2)
    ctl.round()
    make_ready(ctl)
    ctl.informer.apply_event(
        "MODIFIED", dict(ctl.informer.get("ns/web"), spec=dict(pool_obj(replicas=1)["spec"]))
    )
    ctl.pools.held = True
    tick(ctl)
    assert len(ctl.pools.deleted) == 1
    tick(ctl)
    tick(ctl)
    assert len(ctl.pools.deleted) == 1  # the cache still shows it alive: not deleted twice
    assert ctl.expectations._pending["ns/web"].deletes
    ctl.pools.deliver()
    assert not ctl.expectations._pending


def test_a_create_that_fails_is_not_waited_for():
    ctl = started()
    create, calls = ctl.pools.create_proxy, []

    def failing_second(namespace, body):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("apiserver said no")
        return create(namespace, body)

    ctl.pools.create_proxy = failing_second
    ctl.round()  # one made (and seen), the second failed, the third never asked
    assert len(ctl.pools.created) == 1 and not ctl.expectations._pending
    tick(ctl)
    assert len(ctl.pools.created) == 3


@pytest.mark.parametrize(
    ("new", "met"),
    [
        (None, True),
        (member("m", deletionTimestamp="2026-12-01T10:00:00Z"), True),
        (member("m", uid="u2"), True),  # another object of that name
        (member("m"), False),  # the same member, still alive
    ],
)
def test_what_meets_a_delete(new, met):
    exp = Expectations(clock=lambda: 0.0)
    exp.expect_delete("ns/p", "ns/m", "u1")
    exp.observe("ns/p", "ns/m", member("m"), new)
    assert exp.satisfied("ns/p") is met


def test_only_a_member_new_to_the_cache_meets_a_create():
    exp = Expectations(clock=lambda: 0.0)
    exp.expect_creates("ns/p", 2)
    exp.observe("ns/p", "ns/a", member("a"), member("a"))  # an update: not a create
    exp.observe("ns/p", "ns/b", None, member("b"))
    assert not exp.satisfied("ns/p")
    exp.observe("ns/p", "ns/c", None, member("c"))
    assert exp.satisfied("ns/p")


def test_expectations_expire_and_a_forgotten_pool_waits_for_nothing():
    now = [0.0]
    exp = Expectations(ttl=10.0, clock=lambda: now[0])
    exp.expect_creates("ns/p", 1)
    exp.expect_creates("ns/q", 1)
    assert (exp.satisfied("ns/p"), exp.wait_left("ns/p")) == (False, 10.0)
    now[0] = 10.0
    assert exp.satisfied("ns/p") and exp.wait_left("ns/p") == 0.0
    exp.forget("ns/q")
    assert exp.satisfied("ns/q")


def test_a_controller_started_on_a_filled_proxy_cache_counts_the_members_there():
    """A restart: the Proxy informer's first list went out before the pool loop was built (the
    controller starts its loops after the cache synced), so the loop indexes the cache it joins;
    without that it saw no member and made every pool's members again."""
    ctl = started()
    ctl.round()
    make_ready(ctl)
    kube = types.SimpleNamespace(custom=None, core=None, api_client=k8s.ApiClient(), timeout=10)
    restarted = pool_reconciler.PoolController(kube, ctl.proxies, ctl.configured, ctl.metrics, None)
    made = sorted("ns/" + m["metadata"]["name"] for m in ctl.pools.created)
    assert len(made) == 3 and restarted.members.of("ns/web") == made
