"""The pool path reads what it has and hands nothing over on the side (issue 38).

A pool decides from one snapshot of informer caches: its Service and EndpointSlice are read from
their informers, never with a get at each reconcile; the members it makes or deletes reach the
Proxy controller through the Proxy informer's watch, not through a list of keys pushed into its
queue; a write that meets a newer object raises ``Conflict`` and the pool is requeued.
"""

from __future__ import annotations

import inspect

from egress_proxies_controller.kube.client import Conflict
from egress_proxies_controller.kube.informer import Informer
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.pool.controller import PoolController
from egress_proxies_controller.pool.kube_calls import PoolKube

from .pool_fakes import controller, make_ready, pool_obj, real_publisher, tick
from .test_client_conflicts import RecordingApi, recording_kube

KEY = "ns/web"


def settled_pool():
    ctl = controller()
    ctl.publisher = real_publisher(ctl)
    ctl.informer.apply_event("MODIFIED", pool_obj())
    for _round in range(3):
        tick(ctl)
        make_ready(ctl)
    tick(ctl)
    return ctl


def test_a_pool_at_rest_reads_no_service_or_endpointslice():
    ctl = settled_pool()
    assert {w[1] for w in ctl.pools.writes} == {"Secret", "Service", "EndpointSlice"}
    ctl.pools.writes.clear()
    ctl.pools.reads.clear()
    for _round in range(3):
        tick(ctl)  # a resync each: the pool reconciled, nothing changed
    assert ctl.pools.writes == []
    assert ctl.pools.reads == [("Secret", "web-endpoints")] * 3  # Secrets are not watched


def test_members_reach_the_proxy_controller_through_its_informer_only():
    """No side list: the PoolController has no Proxy queue; the real Proxy informer's events
    (the members' ADDED, then their deletionTimestamp) queue them for the Proxy controller."""
    assert "queue" not in inspect.signature(PoolController).parameters
    ctl = controller()
    proxy_queue = WorkQueue()
    proxies = Informer(None, None, proxy_queue.add, lister=lambda *a, **kw: None)
    proxies.synced.set()
    proxies.watchers.append(ctl._member_changed)
    ctl.proxies = ctl.pools.proxies = proxies
    ctl.informer.apply_event("MODIFIED", pool_obj(replicas=2))
    tick(ctl)
    made = sorted("ns/" + m["metadata"]["name"] for m in ctl.pools.created)
    assert len(made) == 2 and sorted(proxy_queue.pop_due(10, 0)) == made
    assert not hasattr(ctl, "_touched")
    for key in made:
        proxy_queue.done(key)
    ctl.informer.apply_event("MODIFIED", pool_obj(replicas=1))
    tick(ctl)
    assert proxy_queue.pop_due(10, 0) == ["ns/" + ctl.pools.deleted[0]]


def test_the_pools_writes_raise_conflict_on_a_409_without_a_get():
    kube, recorded = recording_kube(pool_obj())
    kube.core = RecordingApi({})
    pools = PoolKube(kube)
    for write in (lambda: pools.set_finalizer(pool_obj(), True), lambda: pools.write_status(pool_obj(), {})):
        try:
            write()
        except Conflict:
            continue
        raise AssertionError("a 409 did not raise Conflict")
    assert recorded.calls == ["patch_namespaced_custom_object", "replace_namespaced_custom_object_status"]


def test_a_pool_whose_finalizer_patch_meets_a_conflict_is_requeued():
    ctl = controller()
    ctl.informer.apply_event("MODIFIED", pool_obj())  # without the pool's finalizer yet

    def conflict(_obj, _present):
        raise Conflict("ProxyPool ns/web")

    ctl.pools.set_finalizer = conflict
    tick(ctl)  # no exception out of the round, nothing done
    assert ctl.pools.created == [] and ctl.events == []
    assert ctl.due.pop_due(10, 0) == []
    ctl.queue_clock.now += 1.0  # the queue's back-off: by then the newer pool has come
    assert ctl.due.pop_due(10, 0) == [KEY]


def test_a_status_conflict_still_tells_what_the_tick_did_and_requeues():
    ctl = controller()
    ctl.informer.apply_event("MODIFIED", pool_obj())

    def conflict(_obj, _status):
        raise Conflict("ProxyPool ns/web")

    ctl.pools.write_status = conflict
    tick(ctl)
    assert ctl.events == ["MembersCreated"]  # the status's own Events wait for the write
    assert ctl.due.pop_due(10, 0) == [KEY]
