"""In-memory fakes of the pool reconciler's surroundings (the informers, the pool's API calls,
the publisher) and a PoolController wired to them, for the decision and event tests."""

from __future__ import annotations

import base64
import copy
import itertools
import json

from egress_proxies_controller.kube.client import ApiException, Conflict
from egress_proxies_controller.kube.informer import Informer
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.pool import controller as pool_reconciler
from egress_proxies_controller.pool.expectations import Expectations
from egress_proxies_controller.pool.members import MemberIndex
from egress_proxies_controller.pool.model import POOL_FINALIZER

UID = "pool-uid"


class FakeInformer:
    """The informer's cache and its notifications: ``apply_event`` tells the watchers (the Proxy
    informer's, as every change does) and ``on_change`` (the pool informer's, as its watch does)."""

    def __init__(self):
        self.cache = {}
        self.synced = type("S", (), {"is_set": lambda _s: True})()
        self.watchers = []
        self.on_change = lambda _key: None

    def get(self, key):
        return self.cache.get(key)

    def cache_keys(self):
        return list(self.cache)

    def objects(self):
        return list(self.cache.values())

    def apply_event(self, kind, obj):
        key = "%s/%s" % (obj["metadata"]["namespace"], obj["metadata"]["name"])
        old = self.cache.get(key)
        if kind == "DELETED":
            self.cache.pop(key, None)
            obj = None
        else:
            self.cache[key] = obj
        for watcher in self.watchers:
            watcher(key, old, obj)
        self.on_change(key)


class FakePoolKube:
    """The pool's API calls; a member's create or delete reaches the Proxy cache as its watch
    event would, at once, unless ``held`` (the events then wait in ``held_events``)."""

    def __init__(self, proxies: FakeInformer):
        self.proxies, self.created, self.deleted = proxies, [], []
        self.published = {}  # kind -> the real Informer its watch feeds (set by controller())
        self.reads = []  # (kind, name) of every get of a published object
        self.held, self.held_events = False, []
        self.pool_informer = None  # set by controller(): where the pool's own writes arrive
        self.names = itertools.count()
        self.secrets = {}  # name -> Secret dict (the user's, as credentials; the pool's copies, whole)
        self.others = {}  # (kind, name) -> the Service or EndpointSlice a real Publisher writes
        self.secrets_deleted = []
        self.writes = []  # (verb, kind, name) of every create and replace
        self.uids = itertools.count(1)
        self.version_reads = 0  # metadata-only reads of a Secret (secret_version)

    def auth_credentials(self, _namespace, name):
        secret = self.secrets.get(name)
        if secret is None:
            raise LookupError("auth Secret ns/%s: Not Found" % name)
        if "data" in secret:
            return tuple(base64.b64decode(secret["data"][k]).decode() for k in ("username", "password"))
        return secret["credentials"]

    def auth_source(self, namespace, name):
        return self.auth_credentials(namespace, name), self.secret_version(namespace, name)

    def secret_version(self, _namespace, name):
        """A version that changes with the Secret's content (the API server's changes on every
        write): what the pool loop compares to tell a changed auth Secret."""
        self.version_reads += 1
        secret = self.secrets.get(name)
        return None if secret is None else json.dumps(secret, sort_keys=True, default=str)

    def _store(self, kind) -> dict:
        return self.secrets if kind == "Secret" else self.others.setdefault(kind, {})

    def read(self, kind, _namespace, name):
        self.reads.append((kind, name))
        obj = self._store(kind).get(name)
        return copy.deepcopy(obj) if obj else None

    def create(self, kind, _namespace, body):
        name = body["metadata"]["name"]
        if name in self._store(kind):
            raise ApiException(status=409, reason="AlreadyExists")
        self.writes.append(("create", kind, name))
        meta = dict(body["metadata"], uid="s-%d" % next(self.uids), resourceVersion="v%d" % next(self.uids))
        return self.by_hand(dict(body, metadata=meta), "ADDED", kind)

    def replace(self, kind, _namespace, body):
        name = body["metadata"]["name"]
        current = self._store(kind)[name]
        if body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
            raise Conflict("%s %s" % (kind, name))
        self.writes.append(("replace", kind, name))
        meta = dict(body["metadata"], uid=current["metadata"]["uid"], resourceVersion="v%d" % next(self.uids))
        return self.by_hand(dict(body, metadata=meta), "MODIFIED", kind)

    def by_hand(self, obj: dict, event: str = "MODIFIED", kind: str = "") -> dict:
        """Store ``obj`` (a Secret, Service or EndpointSlice: ``kind``, else its own) as it is,
        or delete it (``DELETED``), as anyone's write; a watched kind's event reaches its
        informer at once."""
        kind = kind or obj["kind"]
        store, name = self._store(kind), obj["metadata"]["name"]
        if event == "DELETED":
            store.pop(name, None)
        else:
            store[name] = copy.deepcopy(obj)
        if kind in self.published:
            self.published[kind].apply_event(event, copy.deepcopy(obj))
        return copy.deepcopy(obj)

    def delete_secret(self, _namespace, name, uid):
        assert self.secrets[name]["metadata"]["uid"] == uid
        del self.secrets[name]
        self.secrets_deleted.append(name)

    def set_finalizer(self, obj, present):
        fin = [POOL_FINALIZER] if present else []
        return self._pool_watch(dict(obj, metadata=dict(obj["metadata"], finalizers=fin)))

    def write_status(self, obj, status):
        return self._pool_watch(dict(obj, status=status))

    def _pool_watch(self, written):
        """A pool write comes back through the pool informer's watch, at once."""
        if self.pool_informer is not None:
            self.pool_informer.apply_event("MODIFIED", written)
        return written

    def create_proxy(self, namespace, body):
        meta = dict(body["metadata"], name="%s%d" % (body["metadata"]["generateName"], next(self.names)))
        meta.update(uid="m-%s" % meta["name"], creationTimestamp="2026-12-01T10:00:00Z")
        made = dict(body, metadata=meta)
        self.created.append(made)
        self._watch(made)
        return made

    def delete_proxy(self, namespace, name, uid):
        self.deleted.append(name)
        obj = self.proxies.get("%s/%s" % (namespace, name))
        deleting = dict(
            obj, metadata=dict(obj["metadata"], deletionTimestamp="2026-12-01T10:01:00Z", finalizers=["f"])
        )
        self._watch(deleting)
        return deleting

    def _watch(self, obj) -> None:
        if self.held:
            self.held_events.append(obj)
        else:
            self.proxies.apply_event("MODIFIED", obj)

    def deliver(self) -> None:
        """The held watch events arrive."""
        events, self.held_events, self.held = self.held_events, [], False
        for obj in events:
            self.proxies.apply_event("MODIFIED", obj)


class FakePublisher:
    def __init__(self):
        self.urls = []  # (member, credentials) of the last publish

    def publish(self, pool, members, now, credentials=None):
        self.urls = [(m.name, credentials(m) if credentials else None) for m in members if m.ready]
        return []


class Clock:
    """The pool queue's monotonic clock, moved by the tests."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def controller(configured=("local", "second")):
    proxies = FakeInformer()
    ctl = pool_reconciler.PoolController.__new__(pool_reconciler.PoolController)
    ctl.proxies = proxies
    ctl.pools = FakePoolKube(proxies)
    ctl.queue_clock = Clock()
    ctl.due = WorkQueue(base_delay=1.0, max_delay=60.0, clock=ctl.queue_clock)
    ctl.auth_checks = WorkQueue(clock=ctl.queue_clock)
    ctl.members = MemberIndex()
    ctl.expectations = Expectations(clock=ctl.queue_clock)
    proxies.watchers.append(ctl._member_changed)
    ctl.informer = FakeInformer()
    ctl.informer.on_change = ctl.due.add
    ctl.pools.pool_informer = ctl.informer
    ctl.resync, ctl.auth_recheck, ctl._names = 30.0, 5.0, None
    ctl.published = {kind: published_informer(ctl) for kind in ("Service", "EndpointSlice")}
    ctl.pools.published = ctl.published
    ctl.publisher = FakePublisher()
    ctl.auth = pool_reconciler.PoolAuth(ctl.pools)
    ctl.configured = lambda: list(configured)
    ctl.kube = type("K", (), {"event": lambda _s, *a, **kw: ctl.events.append(a[2])})()
    from egress_proxies_controller.telemetry.pool_metrics import PoolMetrics
    from prometheus_client import CollectorRegistry

    ctl.metrics, ctl.target_retry, ctl.may_act = PoolMetrics(CollectorRegistry()), 300.0, lambda: True
    ctl.clock = lambda: 1_764_583_300.0  # 2026-12-01T10:01:40Z
    ctl._seen, ctl.events = {}, []
    return ctl


def published_informer(ctl) -> Informer:
    """A real informer of a published kind, listed (empty), its watcher the controller's."""
    informer = Informer(None, None, lambda _key: None, lister=lambda *a, **kw: None)
    informer.synced.set()
    informer.watchers.append(ctl._published_changed)
    return informer


def real_publisher(ctl):
    """The real Publisher over the fake API and the controller's published informers."""
    return pool_reconciler.Publisher(ctl.pools, ctl.published)


def tick(ctl) -> None:
    """One round after every pool's resync: the decision tests below change things no watch
    reports (a Secret's content, the cache itself), as a pool met at its resync would see them.
    test_pool_events.py tests what brings a pool round without this."""
    ctl.queue_clock.now += ctl.resync
    ctl.round()


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
            ctl.proxies.apply_event("MODIFIED", made)
