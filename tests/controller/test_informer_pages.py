"""The informer lists in pages and caches objects without what no reconcile reads (issue 18).

An unpaginated LIST of 10,000 Proxies is one response of tens of megabytes the API server must
build in memory and the controller must parse at once; managedFields and kubectl's
last-applied-configuration annotation are often larger than the spec and were kept per cached
object. The fake kube here answers like the API server: pages served from the first page's
snapshot (one resourceVersion), a continue token, a 410 when a token has expired.
"""

from __future__ import annotations

import json

import pytest
from cluster import kube_testlib
from egress_proxies_controller.kube import informer as informer_mod
from egress_proxies_controller.kube.client import Kube
from kubernetes.client.exceptions import ApiException

from .fake_cluster import proxy_object

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def heavy_proxy(i: int) -> dict:
    obj = proxy_object(name="p%04d" % i, uid="uid-%d" % i)
    obj["metadata"]["resourceVersion"] = str(100 + i)
    obj["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:spec": {"x": "y" * 200}}}]
    obj["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(obj["spec"]), "team": "crawl"}
    return obj


class PagingKube:
    """``list_proxies`` as the API server pages it; ``expire_after`` pages makes the next
    continuation answer 410 (the snapshot was compacted)."""

    def __init__(self, objects: list, expire_after: int | None = None):
        self.objects = objects
        self.expire_after = expire_after
        self.calls: list = []

    def list_proxies(self, namespace, **kwargs):
        self.calls.append({k: v for k, v in kwargs.items() if k != "_request_timeout"})
        limit, token = kwargs.get("limit"), kwargs.get("_continue")
        if token and self.expire_after is not None and len(self.calls) > self.expire_after:
            raise ApiException(status=410, reason="Expired")
        start = int(token or 0)
        end = len(self.objects) if limit is None else min(start + limit, len(self.objects))
        meta = {"resourceVersion": "777"}
        if end < len(self.objects):
            meta["continue"] = str(end)
        return {"items": self.objects[start:end], "metadata": meta}


def informer(kube, page_size=500) -> informer_mod.Informer:
    return informer_mod.Informer(kube, None, on_change=lambda key: None, page_size=page_size)


def test_a_list_is_fetched_in_pages_and_every_object_is_cached():
    kube = PagingKube([heavy_proxy(i) for i in range(1201)])
    inf = informer(kube)
    assert inf._list() == "777"
    assert [c.get("_continue") for c in kube.calls] == [None, "500", "1000"]
    assert all(c["limit"] == 500 for c in kube.calls)
    assert len(inf.cache_keys()) == 1201 and inf.list_pages == 3
    assert inf.synced.is_set()


def test_an_expired_continuation_falls_back_to_one_unpaginated_list():
    kube = PagingKube([heavy_proxy(i) for i in range(12)], expire_after=1)
    inf = informer(kube, page_size=5)
    assert inf._list() == "777"
    assert kube.calls[-1] == {}  # no limit, no continue: the whole list at once
    assert len(inf.cache_keys()) == 12


def test_a_410_on_the_first_page_is_not_swallowed():
    class Gone(PagingKube):
        def list_proxies(self, namespace, **kwargs):
            raise ApiException(status=410, reason="Gone")

    with pytest.raises(ApiException):
        informer(Gone([]))._list()


def test_cached_objects_carry_no_managed_fields_and_no_last_applied_copy():
    source = heavy_proxy(1)
    inf = informer(PagingKube([source]))
    inf._list()
    cached = inf.get("ns/p0001")
    assert "managedFields" not in cached["metadata"]
    assert cached["metadata"]["annotations"] == {"team": "crawl"}
    assert cached["spec"] == source["spec"]
    assert "managedFields" in source["metadata"]  # the caller's object is left as it was


def test_every_watch_event_is_trimmed_too(monkeypatch):
    class OneEvent:
        def stream(self, *_a, **_kw):
            newer = heavy_proxy(2)
            newer["metadata"]["resourceVersion"] = "900"
            yield {"type": "MODIFIED", "object": newer}

        def stop(self):
            pass

    monkeypatch.setattr(informer_mod.watch, "Watch", OneEvent)
    inf = informer(PagingKube([]))
    inf.apply_event("MODIFIED", heavy_proxy(1))
    assert "managedFields" not in inf.get("ns/p0001")["metadata"]
    inf._watch_from("1")
    assert LAST_APPLIED not in inf.get("ns/p0002")["metadata"]["annotations"]


def test_against_the_api_server_every_page_arrives_and_nothing_is_trimmed_that_a_reconcile_reads(
    kube_admin, kube_namespace
):
    for i in range(7):
        kube_testlib.create_proxy(kube_admin, kube_namespace, "p%d" % i, {"provider": "local"})
    inf = informer_mod.Informer(Kube(kube_admin), kube_namespace, on_change=lambda key: None, page_size=3)
    version = inf._list()
    assert int(version) > 0
    assert inf.list_pages == 3
    keys = sorted(inf.cache_keys())
    assert keys == ["%s/p%d" % (kube_namespace, i) for i in range(7)]
    cached = inf.get(keys[0])
    assert "managedFields" not in cached["metadata"]
    assert cached["metadata"]["uid"] and cached["metadata"]["generation"] == 1
    assert cached["spec"]["provider"] == "local"


def test_a_refused_list_names_its_resource_in_the_log(caplog):
    """The pool loop runs three informers beside the Proxies' one: a controller upgraded without
    the new role (services list/watch refused) must say which list fails, not just that one does."""
    informer = None

    def refused(_namespace, **_kwargs):
        informer.stop()  # one attempt: run() returns after logging it
        raise ApiException(status=403, reason="Forbidden")

    informer = informer_mod.Informer(None, "ns", lambda _key: None, lister=refused, resource="services")
    with caplog.at_level("WARNING", logger="egress_proxies_controller.kube.informer"):
        informer.run()
    assert [r.getMessage() for r in caplog.records] == ["services: list/watch failed: Forbidden; retrying"]
    assert not informer.synced.is_set()
