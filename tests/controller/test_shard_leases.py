"""Shard Leases of several replicas against an in-memory Lease API that behaves like the API
server's (resourceVersion checked on replace: 409; create of an existing name: 409; label
selectors on list; delete preconditions), with a clock the test moves.

Covers: the replicas split the shards as shards.assign says; a replica that stops renewing loses
its membership and its shards go to the others only after the lease duration as observed by
them; a shard is given up only once it is no longer busy; a replica whose renewals fail is
unhealthy at its renew deadline; the heartbeat stops with a held shard.
"""

from __future__ import annotations

import copy
import os

from egress_proxies_controller.sharding import assignment as shards
from egress_proxies_controller.sharding.leases import ShardCoordinator
from kubernetes.client.exceptions import ApiException

NS, ID, COUNT = "ns", "ctl", 6


class Items:
    def __init__(self, items):
        self.items = items


class LeaseApi:
    def __init__(self):
        self.leases = {}
        self.rv = 0
        self.down = set()  # identities whose calls fail (a replica cut off)
        self.caller = None

    def _check(self):
        if self.caller in self.down:
            raise ApiException(status=503, reason="unavailable")

    def _bump(self, lease):
        self.rv += 1
        lease.metadata.resource_version = str(self.rv)
        self.leases[lease.metadata.name] = copy.deepcopy(lease)

    def list_namespaced_lease(self, namespace, label_selector="", _request_timeout=None):
        self._check()
        wanted = dict(p.split("=", 1) for p in label_selector.split(",") if p)
        return Items(
            [
                copy.deepcopy(lease)
                for lease in self.leases.values()
                if all((lease.metadata.labels or {}).get(k) == v for k, v in wanted.items())
            ]
        )

    def create_namespaced_lease(self, namespace, body, _request_timeout=None):
        self._check()
        if body.metadata.name in self.leases:
            raise ApiException(status=409, reason="AlreadyExists")
        self._bump(body)

    def replace_namespaced_lease(self, name, namespace, body, _request_timeout=None):
        self._check()
        current = self.leases.get(name)
        if current is None:
            raise ApiException(status=404, reason="NotFound")
        if body.metadata.resource_version != current.metadata.resource_version:
            raise ApiException(status=409, reason="Conflict")
        self._bump(body)

    def delete_namespaced_lease(self, name, namespace, body=None, _request_timeout=None):
        self._check()
        current = self.leases.get(name)
        if current is None:
            raise ApiException(status=404, reason="NotFound")
        pre = body.preconditions.resource_version if body is not None and body.preconditions else None
        if pre is not None and pre != current.metadata.resource_version:
            raise ApiException(status=409, reason="Conflict")
        del self.leases[name]


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Replica:
    def __init__(self, api, clock, identity, tmp_path, busy=lambda s: False):
        self.api, self.identity = api, identity
        self.acquired = []
        self.coordinator = ShardCoordinator(
            api,
            NS,
            ID,
            identity,
            COUNT,
            lease_duration=15,
            renew_deadline=10,
            retry_period=2,
            heartbeat=str(tmp_path / ("hb-" + identity)),
            on_acquired=self.acquired.append,
            busy=busy,
            clock=clock,
        )

    def round(self):
        self.api.caller = self.identity
        try:
            self.coordinator.round()
        except ApiException:
            pass

    def held(self):
        return self.coordinator.owned()


def holders(api):
    out = {}
    for name, lease in api.leases.items():
        if "-shard-" in name and lease.spec.holder_identity:
            out[int(name.rsplit("-", 1)[1])] = lease.spec.holder_identity
    return out


def rounds(replicas, clock, n, step=2.0):
    for _round in range(n):
        for replica in replicas:
            replica.round()
        clock.now += step


def test_replicas_split_the_shards_as_assigned_and_take_over_a_dead_one(tmp_path):
    api, clock = LeaseApi(), Clock()
    replicas = [Replica(api, clock, name, tmp_path) for name in ("a_1", "b_2", "c_3")]
    rounds(replicas, clock, 3)
    expected = shards.assign(COUNT, ["a_1", "b_2", "c_3"])
    assert holders(api) == expected
    for replica in replicas:
        assert replica.held() == {s for s, m in expected.items() if m == replica.identity}
        assert replica.held() <= set(replica.acquired)  # the first one up took all, then gave some up
        assert replica.coordinator.settled()
    dead = replicas[0]
    lost = dead.held()
    survivors = replicas[1:]
    # The dead replica stops renewing: nothing moves before its leases expire (observed by the others).
    rounds(survivors, clock, 6)  # 12 s < 15 s lease duration
    assert {s for s, m in holders(api).items() if m == "a_1"} == lost
    rounds(survivors, clock, 6)  # past the membership lease, then the shard leases
    after = shards.assign(COUNT, ["b_2", "c_3"])
    assert holders(api) == after
    assert all(after[s] != "a_1" for s in lost)
    for replica in survivors:
        assert replica.held() == {s for s, m in after.items() if m == replica.identity}
    rounds(survivors, clock, 10)  # expired membership Leases are deleted for good
    assert not any(n.endswith("-member-a-1") for n in api.leases)


def test_a_shard_is_given_up_only_once_not_busy_and_then_taken_at_once(tmp_path):
    api, clock = LeaseApi(), Clock()
    busy = set()
    a = Replica(api, clock, "a_1", tmp_path, busy=lambda s: s in busy)
    rounds([a], clock, 2)
    assert a.held() == set(range(COUNT))
    b = Replica(api, clock, "b_2", tmp_path)
    moving = {s for s, m in shards.assign(COUNT, ["a_1", "b_2"]).items() if m == "b_2"}
    busy.update(moving)  # a run holding keys of those shards is still in flight on a
    rounds([b, a], clock, 3)
    assert a.held() == set(range(COUNT)) - moving  # not dispatched any more...
    assert {s for s, m in holders(api).items() if m == "a_1"} == set(range(COUNT))  # ...but kept
    assert all(not a.coordinator.dispatching(s) for s in moving)
    assert b.held() == set() and not b.coordinator.settled()
    busy.clear()
    rounds([a, b], clock, 1, step=0.5)  # released by a, taken by b in the same round: no wait
    assert b.held() == moving and a.held() == set(range(COUNT)) - moving
    assert holders(api) == shards.assign(COUNT, ["a_1", "b_2"])


def test_renewal_failures_make_the_replica_unhealthy_at_the_deadline_and_stop_the_heartbeat(tmp_path):
    api, clock = LeaseApi(), Clock()
    a = Replica(api, clock, "a_1", tmp_path)
    rounds([a], clock, 2)
    heartbeat = str(tmp_path / "hb-a_1")
    assert a.coordinator.healthy() and os.path.exists(heartbeat)
    beat = os.stat(heartbeat).st_mtime_ns
    api.down.add("a_1")
    rounds([a], clock, 3)  # 8 s since the last renewal: within the renew deadline
    assert a.coordinator.healthy()
    rounds([a], clock, 1)  # 10 s
    assert not a.coordinator.healthy()
    assert os.stat(heartbeat).st_mtime_ns == beat


def test_one_held_shard_failing_is_enough_to_stop_the_heartbeat(tmp_path):
    api, clock = LeaseApi(), Clock()
    a = Replica(api, clock, "a_1", tmp_path)
    rounds([a], clock, 2)
    heartbeat = str(tmp_path / "hb-a_1")
    beat = os.stat(heartbeat).st_mtime_ns
    # Someone overwrote shard 2's Lease (an operator): a's renewals of it fail, the rest succeed.
    lease = api.leases["%s-shard-2" % ID]
    lease.spec.holder_identity = "intruder"
    api._bump(lease)
    rounds([a], clock, 6)
    assert os.stat(heartbeat).st_mtime_ns == beat
    assert not a.coordinator.healthy()


def test_one_failed_membership_renewal_gives_no_shard_away(tmp_path):
    api, clock = LeaseApi(), Clock()
    a = Replica(api, clock, "a_1", tmp_path)
    rounds([a], clock, 2)
    assert a.held() == set(range(COUNT))
    member = api.leases["%s-member-a-1" % ID]
    api._bump(member)  # our own record changed under us (a write whose reply was lost): 409 once
    real_list = api.list_namespaced_lease
    api.list_namespaced_lease = lambda *a_, **k: Items(
        [m if m.metadata.name != member.metadata.name else _stale(m) for m in real_list(*a_, **k).items]
    )
    rounds([a], clock, 1)
    api.list_namespaced_lease = real_list
    assert a.held() == set(range(COUNT)) and a.coordinator.healthy()
    rounds([a], clock, 1)
    assert a.held() == set(range(COUNT))


def _stale(lease):
    lease.metadata.resource_version = "1"
    return lease
