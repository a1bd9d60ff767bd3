"""Inline cloud-init is cached as its digest; a create reads the text from the API server (issue 18).

10,000 Proxies with a 60-line inline user-data each held the text twice in the informer's cache
(the spec, and kubectl's last-applied copy, trimmed already). The reconciler decides from the
spec hash, which covers the text by its digest only, so the cache keeps the digest; the text is
needed once per create and is read then, checked against the digest the create was planned from.
"""

from __future__ import annotations

import os

from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.kube import informer as informer_mod
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.reconciler import Answer, Settings
from egress_proxies_controller.proxy.spec import INLINE_DIGEST_KEY, ProxySpec, digest_of

from .fake_cluster import FakeExecutor, FakeInformer, FakeKube, proxy_object
from .test_manager_snapshots import applied

USER_DATA = "#cloud-config\nwrite_files:\n  - path: /etc/motd\n    content: sentinel-user-data\n"
KEY = "ns/p1"


class TrimmingInformer(FakeInformer):
    """The manager's cache as the real informer keeps it: trimmed objects."""

    def get(self, key):
        obj = self.kube.get(key)
        return None if obj is None else informer_mod.trimmed(obj)


def running(key, action, fields):
    if action.op == "delete":
        return Answer(ok=True, instance={"id": action.provider_id, "state": "absent"})
    instance = {"id": "local/" + action.name, "name": action.name, "uid": action.uid, "state": "Running"}
    return Answer(ok=True, instance=dict(instance, ip="127.77.0.1"))


def manager(kube, executor, providers_file) -> ProxyController:
    private = os.path.join(os.path.dirname(providers_file), "private")
    config = ProvidersConfig(providers_file, private, lambda _path, _names: [])
    m = ProxyController(kube, TrimmingInformer(kube), WorkQueue(0.01, 0.02), executor, Settings(), config)
    m.reload_config()
    return m


def test_the_cache_keeps_the_digest_of_inline_cloud_init_and_the_spec_hash_is_unchanged():
    source = proxy_object(cloudInit={"inline": USER_DATA})
    cached = informer_mod.trimmed(source)
    assert "inline" not in cached["spec"]["cloudInit"]
    assert cached["spec"]["cloudInit"][INLINE_DIGEST_KEY] == digest_of(USER_DATA)
    assert "sentinel-user-data" not in repr(cached)
    assert ProxySpec.from_object(cached).hash() == ProxySpec.from_object(source).hash()
    assert source["spec"]["cloudInit"] == {"inline": USER_DATA}  # the caller's object is unchanged


def test_an_edit_of_the_inline_text_still_changes_the_hash_seen_through_the_cache():
    before = informer_mod.trimmed(proxy_object(cloudInit={"inline": USER_DATA}))
    after = informer_mod.trimmed(proxy_object(cloudInit={"inline": USER_DATA + "# edited\n"}))
    assert ProxySpec.from_object(before).hash() != ProxySpec.from_object(after).hash()


def test_no_or_empty_inline_cloud_init_hashes_as_it_did_before():
    plain = proxy_object()
    empty = proxy_object(cloudInit={"inline": ""})
    assert informer_mod.trimmed(empty) == empty  # nothing to trim
    assert ProxySpec.from_object(empty).hash() == ProxySpec.from_object(plain).hash()


def test_a_create_from_the_trimmed_cache_carries_the_text_read_from_the_api_server(providers_file):
    kube = FakeKube()
    kube.put(proxy_object(cloudInit={"inline": USER_DATA}))
    kube.put(proxy_object(name="plain", uid="uid-2"))
    seen = {}
    executor = FakeExecutor(
        lambda key, action, fields: seen.setdefault(key, fields) and running(key, action, fields)
    )
    m = manager(kube, executor, providers_file)
    applied(m)
    assert seen[KEY]["cloud_init"] == USER_DATA
    assert "cloud_init" not in seen["ns/plain"]
    assert kube.gets == [KEY]  # one read, for the Proxy with inline text only
    assert kube.get(KEY)["status"]["providerID"]


def test_text_edited_after_the_plan_is_never_sent_and_the_proxy_is_planned_again(providers_file):
    kube = FakeKube()
    kube.put(proxy_object(cloudInit={"inline": USER_DATA}))
    kube.put(proxy_object(name="plain", uid="uid-2"))
    m = manager(kube, FakeExecutor(running), providers_file)
    edited = proxy_object(cloudInit={"inline": USER_DATA.replace("sentinel", "edited")})
    real_get = kube.get_proxy

    def edit_then_get(namespace, name):
        kube.put(edited)  # a user edits the text between the plan and the create's read
        return real_get(namespace, name)

    kube.get_proxy = edit_then_get
    sent = []
    m.batcher.executor = FakeExecutor(
        lambda key, action, fields: sent.append(fields) or running(key, action, fields)
    )
    applied(m)
    assert all("edited" not in (f or {}).get("cloud_init", "") for f in sent)
    assert not (kube.get(KEY)["status"] or {}).get("providerID")  # nothing made from either text
    assert kube.get("ns/plain")["status"]["providerID"]  # only that Proxy waits
    kube.get_proxy = real_get
    # Its answer (Transient: the text changed) was recorded on generation 2 and the key requeued:
    # planned again from generation 2, and that create's answer recorded.
    assert KEY in applied(m)
    assert (kube.get(KEY)["status"] or {}).get("observedGeneration") == 2
