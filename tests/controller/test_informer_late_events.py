"""A watch that lags behind the controller's own writes never has a deleted Proxy planned as live.

The manager removes a deleting Proxy's last finalizer; the object is gone, but a watch that lags
(a dropped connection, an API outage, a slow link) still has that Proxy's earlier events to
deliver. Once, the manager cached its own answer and a replayed status write put the Proxy back
as a live object whose next plan said "creating it again". Now nothing the manager writes enters
the cache: the writes are recorded as its own (``own_writes``), and every reconcile the replay
queues reads either ``BEHIND`` (wait for the watch) or the object's real state, never a live
Proxy whose finalizer we already removed.
"""

from __future__ import annotations

from cluster import kube_testlib
from egress_proxies_controller import api
from egress_proxies_controller.kube import informer as informer_mod
from egress_proxies_controller.kube.client import Kube
from kubernetes import client as k8s


def test_a_late_event_of_a_proxy_whose_finalizer_we_removed_is_never_planned_as_live(
    kube_admin, kube_namespace
):
    kube = Kube(kube_admin)
    seen = []  # (key, what a reconcile of the key queued then would read)
    inf = informer_mod.Informer(
        kube, kube_namespace, on_change=lambda key: seen.append((key, inf.snapshot(key)))
    )
    obj = kube_testlib.create_proxy(kube_admin, kube_namespace, "late", {"provider": "local"})
    key = "%s/late" % kube_namespace
    obj = kube.set_finalizer(obj, True)
    resume_from = inf._list()  # what the watch would resume from: it sees nothing after this
    custom = k8s.CustomObjectsApi(kube_admin)
    status = {"state": "Running", "ip": "127.0.0.1", "providerID": "local/proxy-late"}
    custom.patch_namespaced_custom_object_status(
        api.GROUP, api.VERSION, kube_namespace, api.PROXY_PLURAL, "late", {"status": status}
    )
    custom.delete_namespaced_custom_object(api.GROUP, api.VERSION, kube_namespace, api.PROXY_PLURAL, "late")
    deleting = kube.get_proxy(kube_namespace, "late")
    assert deleting["metadata"].get("deletionTimestamp")
    final = kube.set_finalizer(deleting, False)  # the manager's last write: the object is gone
    inf.own_writes.wrote(final)
    assert inf.snapshot(key) is informer_mod.BEHIND  # the cache still holds the listed version
    seen.clear()

    inf.watch_timeout = 2  # the replayed events, then the watch ends
    inf._watch_from(resume_from)

    planned = [o for k, o in seen if k == key and o is not informer_mod.BEHIND]
    ghosts = [o for o in planned if o is not None and not o["metadata"].get("deletionTimestamp")]
    assert ghosts == [], "the deleted Proxy came back as live: %s" % ghosts[0]["status"]
    assert seen and planned[-1:] == [None]  # the DELETED event queued it: found gone
    assert inf.get(key) is None


def test_a_replayed_watch_never_brings_a_deleted_proxy_back(kube_admin, kube_namespace):
    """The leak CI's fault matrix met (ctl-api-blackhole, after ctl-api-down): a Proxy deleted,
    its DELETED event applied (its own-write record dropped with it), then its earlier events
    delivered again by a watch that resumed from an older version. The replayed status event
    put it back as live and Running, its next plan polled a gone instance and created it again,
    and the instance outlived the Proxy. Now an event of a UID already deleted is dropped."""
    kube = Kube(kube_admin)
    seen = []
    inf = informer_mod.Informer(
        kube, kube_namespace, on_change=lambda key: seen.append((key, inf.snapshot(key)))
    )
    key = "%s/replayed" % kube_namespace
    resume_from = inf._list()
    obj = kube_testlib.create_proxy(kube_admin, kube_namespace, "replayed", {"provider": "local"})
    obj = kube.set_finalizer(obj, True)
    custom = k8s.CustomObjectsApi(kube_admin)
    status = {"state": "Running", "ip": "127.0.0.1", "providerID": "local/proxy-replayed"}
    custom.patch_namespaced_custom_object_status(
        api.GROUP, api.VERSION, kube_namespace, api.PROXY_PLURAL, "replayed", {"status": status}
    )
    custom.delete_namespaced_custom_object(
        api.GROUP, api.VERSION, kube_namespace, api.PROXY_PLURAL, "replayed"
    )
    kube.set_finalizer(kube.get_proxy(kube_namespace, "replayed"), False)  # gone

    inf.watch_timeout = 2
    inf._watch_from(resume_from)  # every event, the DELETED last
    assert inf.get(key) is None
    seen.clear()
    inf._watch_from(resume_from)  # the same events again: a watch resumed from too old a version
    live = [o for k, o in seen if k == key and o not in (None, informer_mod.BEHIND)]
    assert live == [], "the deleted Proxy came back: %s" % live[0]
    assert inf.get(key) is None
