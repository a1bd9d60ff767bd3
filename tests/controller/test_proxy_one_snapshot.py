"""A Proxy reconcile reads its object once and writes with that version (issue 30).

controller-runtime's shape: each reconcile (the one that plans a call, the one that applies its
answer) decides from and writes with the one snapshot it read from the informer's cache (a write
that meets a newer object requeues the key: test_manager_snapshots.py), and the controller never
puts what it wrote into the cache
(the watch delivers it). Its own writes are
expected instead, ReplicaSet style: their watch events queue nothing, and a key planned while the
cache is still behind them waits for the watch to catch up.
"""

from __future__ import annotations

from egress_proxies_controller.kube import informer as informer_mod

from .fake_cluster import FakeExecutor, FakeInformer, FakeKube, proxy_object
from .test_manager_snapshots import KEY, applied, manager, running


class CountingInformer(FakeInformer):
    """Counts the cache's reads of each key and every write into it."""

    def __init__(self, kube):
        super().__init__(kube)
        self.reads, self.stored = [], []

    def get(self, key):
        self.reads.append(key)
        return super().get(key)

    def store(self, obj):  # what main's controller called with each of its writes
        self.stored.append(obj)


def test_a_create_reads_the_cache_once_and_never_writes_into_it(providers_file):
    kube = FakeKube()
    kube.put(proxy_object(uid="uid-1"))
    informer = CountingInformer(kube)
    executor = FakeExecutor(running)
    m = manager(kube, executor, providers_file, informer)
    informer.reads.clear()
    assert applied(m) == [KEY]
    assert kube.get(KEY)["status"]["providerID"]
    assert informer.reads == [KEY, KEY]  # the plan's snapshot, then the answer's reconcile's
    assert informer.stored == []


def _version(rv: str, **status) -> dict:
    obj = proxy_object()
    obj["metadata"]["resourceVersion"] = rv
    obj["status"] = status
    return obj


def test_our_own_writes_queue_nothing_and_a_plan_behind_them_waits_for_the_watch():
    queued = []
    inf = informer_mod.Informer(None, None, queued.append, lister=lambda *a, **kw: None)
    inf.apply_event("ADDED", _version("5"))
    assert queued == [KEY]
    inf.own_writes.wrote(_version("6", state="Running"))  # our status write's answer
    inf.own_writes.wrote(_version("7", state="Running"))
    assert inf.snapshot(KEY) is informer_mod.BEHIND  # the cache still holds version 5
    queued.clear()
    inf.apply_event(
        "MODIFIED",
        dict(_version("6", state="Running"), metadata=dict(_version("6")["metadata"], finalizers=[])),
    )
    assert queued == []  # our own write: nothing to reconcile, and not caught up yet
    assert inf.snapshot(KEY) is informer_mod.BEHIND
    inf.apply_event("MODIFIED", _version("7", state="Running"))
    assert queued == [KEY]  # caught up: the key that waited is queued again
    assert inf.snapshot(KEY)["metadata"]["resourceVersion"] == "7"


def test_a_users_change_after_our_write_queues_the_key_and_deletion_releases_a_waiting_one():
    queued = []
    inf = informer_mod.Informer(None, None, queued.append, lister=lambda *a, **kw: None)
    inf.apply_event("ADDED", _version("5"))
    inf.own_writes.wrote(_version("6"))
    queued.clear()
    inf.apply_event("MODIFIED", _version("6"))
    edited = _version("7")
    edited["metadata"]["annotations"] = {"note": "x"}
    inf.apply_event("MODIFIED", edited)
    assert queued == [KEY]  # someone else's write: reconciled
    inf.own_writes.wrote(_version("9"))
    assert inf.snapshot(KEY) is informer_mod.BEHIND
    queued.clear()
    inf.apply_event("DELETED", _version("10"))
    assert queued == [KEY] and inf.snapshot(KEY) is None  # gone: the waiting key is dropped
