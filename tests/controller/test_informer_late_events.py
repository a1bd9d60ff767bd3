"""A watch that lags behind the controller's own writes never brings a deleted Proxy back.

The manager removes a deleting Proxy's last finalizer and stores the answer, which drops the key
from the cache (the object is gone). A watch resumed from an older version (after a dropped
connection, an API outage, a slow link) then replays that Proxy's earlier events: before this
test, the first of them (a status write from before the deletion) put the Proxy back as a live,
not-deleting object and queued its key, so the next plan read a Running Proxy whose instance was
gone and answered with "creating it again" until the DELETED event caught up.
"""

from __future__ import annotations

from cluster import kube_testlib
from egress_proxies_controller import api
from egress_proxies_controller.kube import informer as informer_mod
from egress_proxies_controller.kube.client import Kube
from kubernetes import client as k8s


def test_a_late_event_of_a_proxy_whose_finalizer_we_removed_is_not_cached_again(kube_admin, kube_namespace):
    kube = Kube(kube_admin)
    seen = []  # (key, what the cache held when the key was queued)
    inf = informer_mod.Informer(kube, kube_namespace, on_change=lambda key: seen.append((key, inf.get(key))))
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
    inf.store(deleting)
    inf.store(kube.set_finalizer(deleting, False))  # the manager's last write: the object is gone
    assert inf.get(key) is None
    seen.clear()

    inf.watch_timeout = 2  # the replayed events, then the watch ends
    inf._watch_from(resume_from)

    ghosts = [o for k, o in seen if k == key and o is not None and not o["metadata"].get("deletionTimestamp")]
    assert ghosts == [], "the deleted Proxy came back as live: %s" % ghosts[0]["status"]
    assert inf.get(key) is None
