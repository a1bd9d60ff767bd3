"""The pool reconciler's wiring over in-memory fakes: member bodies (generated name, labels,
controller ownerReference), a skipped target and why, its share moving, the skip remembered only
for a member failure, and a pool's deletion releasing it only once no member is left."""

from __future__ import annotations

import base64
import itertools
import json

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
        self.secrets = {}  # name -> Secret dict (the user's, as credentials; the pool's copies, whole)
        self.secrets_deleted = []

    def auth_credentials(self, _namespace, name):
        secret = self.secrets.get(name)
        if secret is None:
            raise LookupError("auth Secret ns/%s: Not Found" % name)
        if "data" in secret:
            return tuple(base64.b64decode(secret["data"][k]).decode() for k in ("username", "password"))
        return secret["credentials"]

    def read(self, kind, _namespace, name):
        assert kind == "Secret"
        return self.secrets.get(name)

    def create(self, kind, _namespace, body):
        assert kind == "Secret" and body["metadata"]["name"] not in self.secrets
        self.secrets[body["metadata"]["name"]] = dict(body, metadata=dict(body["metadata"], uid="s-1"))

    def delete_secret(self, _namespace, name, uid):
        assert self.secrets[name]["metadata"]["uid"] == uid
        del self.secrets[name]
        self.secrets_deleted.append(name)

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
    def __init__(self):
        self.urls = []  # (member, credentials) of the last publish

    def publish(self, pool, members, now, credentials=None):
        self.urls = [(m.name, credentials(m) if credentials else None) for m in members if m.ready]
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
    ctl.auth = pool_reconciler.PoolAuth(ctl.pools)
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


def test_a_target_over_capacity_keeps_its_members_on_their_way_and_only_the_failed_go():
    """Issue 31: of main's 4 members 2 failed QuotaExceeded and 2 fit, still Provisioning (not
    Ready). main holds 2 (not 0: its Ready count), so only the failed ones are deleted."""
    ctl, _queue = controller()
    ctl.informer.store(pool_obj(replicas=6))
    ctl.round()
    main = [m for m in ctl.pools.created if m["spec"]["provider"] == "local"]
    assert len(main) == 4
    quota = {"type": "QuotaExceeded", "status": "True", "reason": "QuotaExceeded", "message": "exhausted"}
    for failed in main[2:]:
        failed["status"] = {"conditions": [quota]}
        ctl.proxies.store(failed)
    ctl.round()
    status = ctl.informer.get("ns/web")["status"]
    assert [t["desired"] for t in status["targets"]] == [2, 4]
    assert sorted(ctl.pools.deleted) == sorted(m["metadata"]["name"] for m in main[2:])


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


def recording(ctl) -> list:
    """Every Event's (reason, message), the fake kube's list keeping only reasons."""
    said = []
    ctl.kube = type("K", (), {"event": lambda _s, *a, **kw: said.append((a[2], a[3]))})()
    return said


def auth_pool(replicas=3) -> dict:
    obj = pool_obj(replicas)
    obj["spec"]["template"]["auth"] = {"secretRef": {"name": "creds"}}
    return obj


def copy_of(member: dict) -> str:
    return member["spec"]["auth"]["secretRef"]["name"]


def finish_round(ctl) -> None:
    """What the Proxy reconciler does between two ticks: new members turn Ready, deleted ones go."""
    for key in list(ctl.proxies.cache):
        if ctl.proxies.cache[key]["metadata"].get("deletionTimestamp"):
            del ctl.proxies.cache[key]
    make_ready(ctl, {m["metadata"]["name"] for m in ctl.pools.created if "status" not in m})


def live(ctl) -> list:
    return [o for o in ctl.proxies.cache.values() if not o["metadata"].get("deletionTimestamp")]


def test_a_change_of_the_auth_secrets_content_rolls_the_members_under_the_budget():
    """Members name the pool's copy of the credentials (never the user's Secret, whose change
    would rotate each member in place); new content is a new copy, so a new revision: the
    members roll with maxUnavailable 1, each published with the credentials it has, and the old
    copy is deleted once no member names it. No password is in a member, the status or an Event."""
    ctl, _queue = controller()
    said = recording(ctl)
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "first-pass")}
    ctl.informer.store(auth_pool())
    ctl.round()
    finish_round(ctl)
    ctl.round()
    first = {copy_of(m) for m in live(ctl)}
    assert len(first) == 1 and next(iter(first)).startswith("web-auth-")
    (old_copy,) = first
    copy = ctl.pools.secrets[old_copy]
    assert copy["immutable"] is True and copy["metadata"]["ownerReferences"][0]["uid"] == UID
    assert base64.b64decode(copy["data"]["password"]).decode() == "first-pass"
    assert sorted(c for _n, c in ctl.publisher.urls) == [("crawler", "first-pass")] * 3
    assert ctl.informer.get("ns/web")["status"]["authSecrets"] == [old_copy]
    first_members = {m["metadata"]["name"] for m in live(ctl)}
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "second-pass")}
    ready_seen, published = [], set()
    for _tick in range(20):
        ctl.round()
        ready_seen.append(sum(1 for o in live(ctl) if "status" in o))
        published |= set(ctl.publisher.urls)
        finish_round(ctl)
        if not first_members & {m["metadata"]["name"] for m in live(ctl)} and len(live(ctl)) == 3:
            break
    else:
        raise AssertionError("the roll did not finish: %s" % sorted(ctl.proxies.cache))
    ctl.round()
    assert min(ready_seen) >= 2, ready_seen  # never fewer than replicas - maxUnavailable
    (new_copy,) = {copy_of(m) for m in live(ctl)}
    assert new_copy != old_copy
    # During the roll each member was listed with its own credentials: old ones with the old.
    assert {(n, c) for n, c in published if n in first_members} <= {
        (n, ("crawler", "first-pass")) for n in first_members
    }
    assert {c for n, c in published if n not in first_members} == {("crawler", "second-pass")}
    assert ctl.pools.secrets_deleted == [old_copy]
    assert ctl.informer.get("ns/web")["status"]["authSecrets"] == [new_copy]
    seen = json.dumps([ctl.pools.created, ctl.informer.get("ns/web"), said])
    assert "first-pass" not in seen and "second-pass" not in seen


def test_the_same_content_keeps_every_member_and_the_fingerprint_is_the_pools_own():
    ctl, _queue = controller()
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "pass")}
    ctl.informer.store(auth_pool())
    ctl.round()
    finish_round(ctl)
    ctl.round()
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "pass")}  # re-saved, same content
    ctl.auth = pool_reconciler.PoolAuth(ctl.pools)  # a restarted controller computes it again
    ctl.round()
    assert ctl.pools.deleted == [] and len(ctl.pools.created) == 3
    from egress_proxies_controller import pool_auth

    assert pool_auth.fingerprint(UID, "crawler", "pass") != pool_auth.fingerprint("other", "crawler", "pass")
    assert pool_auth.fingerprint(UID, "crawler", "pass") != pool_auth.fingerprint(UID, "crawler", "pass2")


def test_an_unreadable_auth_secret_changes_no_member_and_says_so_once():
    ctl, _queue = controller()
    said = recording(ctl)
    ctl.informer.store(auth_pool())
    ctl.round()
    ctl.round()
    assert ctl.pools.created == [] and ctl.pools.deleted == []
    assert said == [("PublishFailed", "members not changed: auth Secret ns/creds: Not Found")]
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "bad\npass")}
    ctl.round()
    assert ctl.pools.created == []
    assert said[-1][1] == (
        "members not changed: auth Secret ns/creds: key password contains control characters "
        "(a trailing newline from echo?)"
    )


def test_a_copy_name_taken_by_another_owner_makes_no_member():
    ctl, _queue = controller()
    said = recording(ctl)
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "pass")}
    from egress_proxies_controller import pool_auth

    taken = "web-auth-" + pool_auth.fingerprint(UID, "crawler", "pass")
    ctl.pools.secrets[taken] = {"metadata": {"name": taken, "uid": "x"}}
    ctl.informer.store(auth_pool())
    ctl.round()
    assert ctl.pools.created == []
    assert [m for _r, m in said] == [
        "members not changed: Secret ns/%s exists and is not this pool's: no member is made" % taken
    ]
