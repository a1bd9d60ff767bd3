"""The pool reconciler's wiring over in-memory fakes: member bodies (generated name, labels,
controller ownerReference), a skipped target and why, its share moving, the skip remembered only
for a member failure, and a pool's deletion releasing it only once no member is left."""

from __future__ import annotations

import itertools

from egress_proxies_controller import pool_reconciler
from egress_proxies_controller.pool_model import POOL_FINALIZER

UID = "pool-uid"


class FakeInformer:
    def __init__(self):
        self.cache = {}
        self.synced = type("S", (), {"is_set": lambda _s: True})()

    def get(self, key):
        return self.cache.get(key)

    def cache_keys(self):
        return list(self.cache)

    def store(self, obj):
        self.cache["%s/%s" % (obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj


class FakePoolKube:
    def __init__(self, proxies: FakeInformer):
        self.proxies, self.created, self.deleted = proxies, [], []
        self.names = itertools.count()

    def set_finalizer(self, obj, present):
        fin = [POOL_FINALIZER] if present else []
        return dict(obj, metadata=dict(obj["metadata"], finalizers=fin))

    def write_status(self, obj, status):
        return dict(obj, status=status)

    def create_proxy(self, namespace, body):
        meta = dict(body["metadata"], name="%s%d" % (body["metadata"]["generateName"], next(self.names)))
        meta.update(uid="m-%s" % meta["name"], creationTimestamp="2026-12-01T10:00:00Z")
        made = dict(body, metadata=meta)
        self.created.append(made)
        return made

    def delete_proxy(self, namespace, name, uid):
        self.deleted.append(name)
        obj = self.proxies.get("%s/%s" % (namespace, name))
        return dict(
            obj, metadata=dict(obj["metadata"], deletionTimestamp="2026-12-01T10:01:00Z", finalizers=["f"])
        )


class FakePublisher:
    def publish(self, pool, members, now):
        return []

    def forget(self, uid):
        pass


def controller(configured=("local", "second")):
    proxies, queue = FakeInformer(), []
    ctl = pool_reconciler.PoolController.__new__(pool_reconciler.PoolController)
    ctl.proxies, ctl.queue = proxies, type("Q", (), {"add": lambda _s, k: queue.append(k)})()
    ctl.pools = FakePoolKube(proxies)
    ctl.informer = FakeInformer()
    ctl.publisher = FakePublisher()
    ctl.configured = lambda: list(configured)
    ctl.kube = type("K", (), {"event": lambda _s, *a, **kw: ctl.events.append(a[2])})()
    from egress_proxies_controller.pool_metrics import PoolMetrics
    from prometheus_client import CollectorRegistry

    ctl.metrics, ctl.target_retry, ctl.may_act = PoolMetrics(CollectorRegistry()), 300.0, lambda: True
    ctl.clock = lambda: 1_764_583_300.0  # 2026-12-01T10:01:40Z
    ctl._touched, ctl._problems, ctl._seen, ctl.events = [], {}, {}, []
    return ctl, queue


def pool_obj(replicas=3, **meta) -> dict:
    return {
        "apiVersion": "crawl.example.com/v1alpha1",
        "kind": "ProxyPool",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "uid": UID,
            "generation": 1,
            "resourceVersion": "1",
            **meta,
        },
        "spec": {
            "replicas": replicas,
            "template": {"port": 3128},
            "spread": [
                {"name": "main", "provider": "local", "weight": 2},
                {"name": "side", "provider": "second", "weight": 1},
            ],
            "strategy": {"maxSurge": 1, "maxUnavailable": 1},
        },
    }


def make_ready(ctl, names=None) -> None:
    for made in ctl.pools.created:
        if names is None or made["metadata"]["name"] in names:
            made["status"] = {
                "ip": "10.0.0.%d" % len(made["metadata"]["name"]),
                "provider": made["spec"]["provider"],
                "conditions": [{"type": "Ready", "status": "True"}],
            }
            ctl.proxies.store(made)


def test_members_are_owned_labelled_and_queued():
    ctl, queue = controller()
    ctl.informer.store(pool_obj())
    ctl.round()
    assert sorted(m["spec"]["provider"] for m in ctl.pools.created) == ["local", "local", "second"]
    member = ctl.pools.created[0]["metadata"]
    assert member["generateName"] == "web-"
    assert member["labels"]["crawl.example.com/pool"] == "web"
    assert member["ownerReferences"] == [
        {
            "apiVersion": "crawl.example.com/v1alpha1",
            "kind": "ProxyPool",
            "name": "web",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert sorted(queue) == sorted("ns/" + m["metadata"]["name"] for m in ctl.pools.created)
    ctl.round()  # counted from the cache at once: no second create
    assert len(ctl.pools.created) == 3


def test_a_target_whose_provider_leaves_is_skipped_and_comes_back_at_once():
    ctl, _queue = controller()
    ctl.informer.store(pool_obj())
    ctl.round()
    make_ready(ctl)
    ctl.round()
    ctl.configured = lambda: ["local"]
    ctl.round()
    status = ctl.informer.get("ns/web")["status"]
    degraded = next(c for c in status["conditions"] if c["type"] == "SpreadDegraded")
    assert degraded["status"] == "True" and "target side skipped (provider 'second'" in degraded["message"]
    assert [t["desired"] for t in status["targets"]] == [3, 0]
    assert ctl.pools.created[-1]["spec"]["provider"] == "local"  # the share moved
    assert "SpreadDegraded" in ctl.events
    ctl.configured = lambda: ["local", "second"]
    ctl.round()
    status = ctl.informer.get("ns/web")["status"]
    assert [t["desired"] for t in status["targets"]] == [2, 1]  # not held for --pool-target-retry


def test_a_member_failure_skips_its_target_for_the_retry_time():
    ctl, _queue = controller()
    ctl.informer.store(pool_obj())
    ctl.round()
    side = next(m for m in ctl.pools.created if m["spec"]["provider"] == "second")
    side["status"] = {
        "conditions": [
            {"type": "QuotaExceeded", "status": "True", "reason": "QuotaExceeded", "message": "exhausted"}
        ]
    }
    ctl.proxies.store(side)
    ctl.round()
    status = ctl.informer.get("ns/web")["status"]
    side_status = status["targets"][1]
    assert side_status["desired"] == 0 and "QuotaExceeded: exhausted" in side_status["degraded"]
    assert side["metadata"]["name"] in ctl.pools.deleted  # not Ready: it goes at once
    del ctl.proxies.cache["ns/" + side["metadata"]["name"]]
    ctl.round()  # the failing member is gone, the skip is remembered
    assert ctl.informer.get("ns/web")["status"]["targets"][1]["desired"] == 0


def test_deleting_a_pool_deletes_its_members_and_releases_it_when_none_is_left():
    ctl, _queue = controller()
    ctl.informer.store(pool_obj())
    ctl.round()
    obj = ctl.informer.get("ns/web")
    assert obj["metadata"]["finalizers"] == [POOL_FINALIZER]
    ctl.informer.store(dict(obj, metadata=dict(obj["metadata"], deletionTimestamp="2026-12-01T10:02:00Z")))
    ctl.round()
    assert sorted(ctl.pools.deleted) == sorted(m["metadata"]["name"] for m in ctl.pools.created)
    assert ctl.informer.get("ns/web")["metadata"]["finalizers"] == [POOL_FINALIZER]  # members still there
    ctl.proxies.cache.clear()
    ctl.round()
    assert ctl.informer.get("ns/web")["metadata"]["finalizers"] == []


def test_a_proxy_of_another_owner_is_never_a_member():
    ctl, _queue = controller()
    stranger = {
        "metadata": {
            "name": "web-zzzzz",
            "namespace": "ns",
            "uid": "x",
            "labels": {"crawl.example.com/pool": "web", "crawl.example.com/pool-target": "main"},
            "ownerReferences": [
                {
                    "kind": "ProxyPool",
                    "apiVersion": "crawl.example.com/v1alpha1",
                    "uid": "other",
                    "controller": True,
                }
            ],
        },
        "spec": {"provider": "local"},
    }
    ctl.proxies.store(stranger)
    ctl.informer.store(pool_obj(replicas=0))
    ctl.round()
    assert ctl.pools.deleted == [] and ctl.pools.created == []
