"""The controller side of --shards, on fakes: the manager dispatches only the keys of shards held
here (others are dropped, and queued again when their shard is taken), a shard is busy while one
of its keys is being reconciled or has a call in flight, or a GC sweep claimed it (each part asked
under its own lock: a blocked batcher blocks neither), and the GC sweep passes uid_shards."""

from __future__ import annotations

import os
import threading

from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.loops.orphan_gc import OrphanGC
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.in_flight import InFlight
from egress_proxies_controller.proxy.reconciler import Settings
from egress_proxies_controller.sharding import assignment as shards
from egress_proxies_controller.sharding.keys import Sharding, ShardKeys

from .fake_cluster import FakeInformer, FakeKube, proxy_object
from .test_manager_snapshots import running

COUNT = 3


class Coordinator:
    def __init__(self, held):
        self.held = set(held)

    def dispatching(self, shard):
        return shard in self.held

    def owned(self):
        return set(self.held)


class RecordingExecutor:
    def __init__(self):
        self.keys = []

    def execute(self, actions, create_fields, on_answer=None):
        self.keys.extend(actions)
        return {k: running(k, a, None) for k, a in actions.items()}

    def abort_all(self):
        pass


class Informer(FakeInformer):
    def __init__(self, kube):
        super().__init__(kube)
        self.synced = threading.Event()

    def uids(self):
        return [self.get(k)["metadata"]["uid"] for k in self.cache_keys()]


def uid_in(shard: int, tag: str) -> str:
    return next(u for u in ("%s-%d" % (tag, i) for i in range(1000)) if shards.shard_of(u, COUNT) == shard)


def setup(tmp_path, held):
    kube = FakeKube()
    for shard in range(COUNT):
        for n in range(2):
            kube.put(proxy_object(name="p%d-%d" % (shard, n), uid=uid_in(shard, "s%d-%d" % (shard, n))))
    path = tmp_path / "providers.yaml"
    path.write_text("providers:\n  - {name: local, type: local}\n")
    config = ProvidersConfig(str(path), os.path.join(tmp_path, "private"), lambda _p, _n: [])
    informer = Informer(kube)
    queue = WorkQueue(0.01, 0.02)
    keys = InFlight()
    sharding = Sharding(ShardKeys(COUNT, informer, queue, keys), Coordinator(held))
    executor = RecordingExecutor()
    manager = ProxyController(
        kube, informer, queue, executor, Settings(), config, tick=0.05, owns=sharding.owns, in_flight=keys
    )
    return kube, informer, queue, sharding, executor, manager


def test_only_keys_of_held_shards_are_dispatched_and_a_taken_shard_is_queued(tmp_path):
    kube, informer, queue, sharding, executor, manager = setup(tmp_path, held={1})
    for key in informer.cache_keys():
        queue.add(key)
    manager.reload_config()
    worker = threading.Thread(target=manager.run)
    worker.start()
    try:
        for _attempt in range(100):
            if executor.keys:
                break
            threading.Event().wait(0.05)
        threading.Event().wait(0.5)
        assert sorted(set(executor.keys)) == ["ns/p1-0", "ns/p1-1"]
        sharding.coordinator.held.add(2)  # shard 2 taken: its cached keys are queued
        sharding.keys.acquired(2)
        for _attempt in range(100):
            if {"ns/p2-0", "ns/p2-1"} <= set(executor.keys):
                break
            threading.Event().wait(0.05)
        assert sorted(set(executor.keys)) == ["ns/p1-0", "ns/p1-1", "ns/p2-0", "ns/p2-1"]
    finally:
        manager.stop.set()
        queue.shutdown()
        worker.join(10)
    written = {k for k, _s in kube.status_writes}
    assert not any(k.startswith("ns/p0-") for k in written)


def test_a_shard_is_busy_while_one_of_its_keys_is_reconciled_or_in_flight_or_a_sweep_claimed_it(tmp_path):
    _kube, _informer, queue, sharding, _executor, manager = setup(tmp_path, held={0, 1})
    assert sharding.owns("ns/p0-0") and not sharding.owns("ns/p2-0")
    assert not sharding.keys.busy(0)
    queue.add("ns/p0-0")
    assert queue.pop_due(1, 0) == ["ns/p0-0"]  # a worker reconciles it
    assert sharding.keys.busy(0) and not sharding.keys.busy(1)
    manager.in_flight.add("ns/p0-0")  # its reconcile asked for a call ...
    queue.done("ns/p0-0")  # ... and returned
    assert sharding.keys.busy(0)
    manager.in_flight.settle("ns/p0-0")  # answered
    assert not sharding.keys.busy(0)
    with sharding.claim() as owned:
        assert owned == {0, 1}
        assert sharding.keys.busy(0) and sharding.keys.busy(1) and not sharding.keys.busy(2)
    assert not sharding.keys.busy(1)


def test_a_blocked_batcher_blocks_neither_the_shards_busy_nor_the_queue(tmp_path):
    """Issue 38: each part owns its lock. With the batcher stuck inside its own lock, sharding
    still answers ``busy(shard)`` and the queue still hands keys out and takes them back."""
    _kube, _informer, queue, sharding, _executor, manager = setup(tmp_path, held={0, 1})
    assert sharding.owns("ns/p1-0")  # its shard known (1)
    manager.in_flight.add("ns/p1-0")
    answers = {}

    def ask():
        answers["busy"] = (sharding.keys.busy(0), sharding.keys.busy(1))
        queue.add("ns/p0-1")
        answers["popped"] = "ns/p0-1" in queue.pop_due(100, 0)
        queue.done("ns/p0-1")

    with manager.batcher._lock:  # pylint: disable=protected-access  # the batcher, stuck
        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        asker.join(5)
        assert not asker.is_alive(), "busy(shard) or the queue waited for the batcher's lock"
    assert answers == {"busy": (False, True), "popped": True}


class GCExecutor:
    def __init__(self, sharding):
        self.sharding, self.calls = sharding, []
        self.providers_file = "providers.yaml"

    def gc(self, live, min_age, dry_run, uid_shards=None):
        self.calls.append((sorted(live), uid_shards, self.sharding.keys.busy(0)))
        return {}


def test_the_gc_sweep_collects_only_held_shards_with_every_live_uid(tmp_path):
    _kube, informer, _queue, sharding, _executor, _manager = setup(tmp_path, held={0, 2})
    informer.synced.set()
    executor = GCExecutor(sharding)
    loop = OrphanGC(executor, informer, None, interval=1, jitter=0, min_age=0, dry_run=False, shards=sharding)
    loop.round()
    [(live, uid_shards, busy_during)] = executor.calls
    assert live == sorted(informer.uids()) and len(live) == 2 * COUNT  # every Proxy, not only ours
    assert uid_shards == {"count": COUNT, "owned": [0, 2]}
    assert busy_during  # shard 0 could not be given up while the sweep ran
    sharding.coordinator.held.clear()
    loop.round()
    assert len(executor.calls) == 1  # no shard held: no sweep
