"""ProxyPool end to end (issue 19): the real API server, the real controller process under the
shipped RBAC, two local providers running real Squid, real traffic through every published URL.
"""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from cluster import kube_testlib
from kubernetes import client as k8s

from . import e2e_lib, monitoring_lib, test_e2e
from .e2e_lib import condition
from .pool_e2e_lib import PoolE2E

pytestmark = [pytest.mark.squid]
controller_api = e2e_lib.controller_api
origin = test_e2e.origin


@pytest.fixture
def pools(controller_api, kube_cluster, kube_namespace, tmp_path):
    yield from test_e2e.started(PoolE2E(controller_api, kube_cluster, kube_namespace, tmp_path))


SPREAD = [
    {"name": "main", "provider": "local", "weight": 2},
    {"name": "side", "provider": "second", "weight": 1},
]


def _by_provider(members: list) -> dict:
    out = {}
    for m in members:
        provider = m["status"].get("provider") or m["spec"]["provider"]
        out[provider] = out.get(provider, 0) + 1
    return out


def _check_published(pools: PoolE2E, name: str, origin_port: int) -> list:
    """The Secret and the EndpointSlice list exactly the Ready members; traffic goes through
    every listed URL."""
    ready = pools.ready_members(name)
    urls, entries = pools.endpoints(name)
    assert sorted(urls) == sorted("http://%s:%d" % (m["status"]["ip"], m["spec"]["port"]) for m in ready)
    assert sorted(e["address"] for e in entries) == sorted(m["status"]["ip"] for m in ready)
    assert {e["provider"] for e in entries} <= {"local", "second"}
    # The API server takes no loopback address in an EndpointSlice: the local provider's members
    # are in the Secret only (pool_publish.sliceable; the slice of routable ones: unit-tested).
    assert pools.slice_addresses(name) == []
    for url in urls:
        host, port = url[len("http://") :].rsplit(":", 1)
        assert test_e2e.http_through(host, int(port), origin_port)["client"] == host
    return ready


def test_a_pool_spreads_scales_publishes_and_goes_with_its_members(pools, origin):
    pools.create_pool("web", {"replicas": 6, "template": {"port": 3128}, "spread": SPREAD})
    obj = pools.wait_settled("web", 6)
    ready = _check_published(pools, "web", origin)
    assert _by_provider(ready) == {"local": 4, "second": 2}
    member = ready[0]["metadata"]
    ref = member["ownerReferences"][0]
    assert (ref["kind"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (
        "ProxyPool",
        obj["metadata"]["uid"],
        True,
        True,
    )
    assert member["name"].startswith("web-") and member["labels"]["crawl.example.com/pool"] == "web"
    assert obj["status"]["selector"] == "crawl.example.com/pool=web"
    service = k8s.CoreV1Api(pools.admin).read_namespaced_service("web", pools.namespace)
    assert service.spec.cluster_ip == "None" and not service.spec.selector

    scale = pools.scale("web", 3)  # what `kubectl scale` and an HPA write
    assert scale["spec"]["replicas"] == 3
    pools.wait_settled("web", 3)
    assert _by_provider(_check_published(pools, "web", origin)) == {"local": 2, "second": 1}
    read = pools.custom.get_namespaced_custom_object_scale(
        e2e_lib.GROUP, e2e_lib.VERSION, pools.namespace, "proxypools", "web"
    )
    assert (read["status"]["replicas"], read["status"]["selector"]) == (3, "crawl.example.com/pool=web")

    pools.scale("web", 8)
    pools.wait_settled("web", 8)
    assert _by_provider(_check_published(pools, "web", origin)) == {"local": 5, "second": 3}
    reasons = {
        e.reason
        for e in k8s.CoreV1Api(pools.admin)
        .list_namespaced_event(pools.namespace, field_selector="involvedObject.name=web")
        .items
    }
    assert {"MembersCreated", "MemberDeleted", "Ready"} <= reasons
    metrics = pools.controller.metrics()
    assert 'egress_proxies_pool_ready_replicas{namespace="%s",pool="web"} 8.0' % pools.namespace in metrics
    assert 'egress_proxies_pool_updated_replicas{namespace="%s",pool="web"} 8.0' % pools.namespace in metrics
    for provider, count in (("local", 5), ("second", 3)):
        assert (
            'egress_proxies_proxies{provider="%s",ready="True",reason="Running"} %d.0' % (provider, count)
            in metrics
        )
    assert "egress_proxies_leader 1.0" in metrics
    # The shipped dashboard and alerts name only series this controller exports (those of
    # --shards and of the health monitor: test_e2e_shards.py, test_e2e.py).
    assert monitoring_lib.check_scrape(metrics, "") >= 30

    pools.delete_pool("web")
    kube_testlib.wait_for("pool gone", lambda: pools.pool("web") is None, timeout=120)
    assert pools.members("web") == []
    assert pools.instances() == [] and pools.instances(pools.second_dir) == []


@pytest.fixture
def pools_without_resync(controller_api, kube_cluster, kube_namespace, tmp_path):
    """The pool controller with a resync far beyond the test: only a watch can bring a pool round."""
    env = PoolE2E(controller_api, kube_cluster, kube_namespace, tmp_path)
    yield from test_e2e.started(env, ["--pool-resync", "3600"])


def test_a_published_service_or_endpointslice_changed_by_hand_is_put_back_by_its_watch(
    pools_without_resync,
):
    """The Service and the EndpointSlice a pool publishes are watched (the pool label selecting
    them, under the shipped RBAC): one deleted or edited by hand is put back within seconds, not
    at the resync."""
    pools = pools_without_resync
    core, discovery = k8s.CoreV1Api(pools.admin), k8s.DiscoveryV1Api(pools.admin)
    pools.create_pool("web", {"replicas": 0, "template": {"provider": "local", "port": 3128}})
    kube_testlib.wait_for("slice published", lambda: pools.slice_addresses("web") == [], timeout=60)
    pools.wait_pool(
        "web",
        lambda obj: (obj.get("status") or {}).get("observedGeneration") == obj["metadata"]["generation"],
        "pool web's status written",
    )
    edited = discovery.read_namespaced_endpoint_slice("web", pools.namespace)
    edited.endpoints = [
        k8s.V1Endpoint(addresses=["10.9.9.9"], conditions=k8s.V1EndpointConditions(ready=True))
    ]
    discovery.replace_namespaced_endpoint_slice("web", pools.namespace, edited)
    assert pools.slice_addresses("web") == ["10.9.9.9"]
    kube_testlib.wait_for(
        "slice put back", lambda: pools.slice_addresses("web") == [], timeout=30, interval=0.5
    )
    first = core.read_namespaced_service("web", pools.namespace).metadata.uid
    core.delete_namespaced_service("web", pools.namespace)

    def service_again():
        try:
            return core.read_namespaced_service("web", pools.namespace).metadata.uid != first
        except k8s.exceptions.ApiException as exc:
            if exc.status == 404:
                return False
            raise

    kube_testlib.wait_for("Service made again", service_again, timeout=30, interval=0.5)


def test_a_restarted_controller_keeps_the_pools_members_and_makes_none(pools):
    """The controller starts its pool loop after the Proxy cache synced: the loop must count the
    members already there (before the fix a restart made every pool's members again)."""
    pools.create_pool("web", {"replicas": 3, "template": {"port": 3128}, "spread": SPREAD})
    pools.wait_settled("web", 3)
    before = sorted(m["metadata"]["uid"] for m in pools.members("web"))
    assert pools.controller.stop() == 0
    pools.controller.start()
    pools.controller.wait_ready()
    pools.wait_settled("web", 3)
    time.sleep(10)  # ten pool rounds, each with the members in the cache
    assert sorted(m["metadata"]["uid"] for m in pools.members("web")) == before
    pattern = r"^egress_proxies_pool_members_created_total\{[^}]*\} (\S+)$"
    assert sum(float(v) for v in re.findall(pattern, pools.controller.metrics(), re.M)) == 0


def _ready_count(pools: PoolE2E, name: str) -> int:
    return len(pools.ready_members(name))


def test_a_rotation_keeps_the_budget_and_ends_with_every_member_younger_than_max_age(pools):
    """maxAge set on a settled pool of 4 rotates every member, two at a time (maxSurge 1,
    maxUnavailable 1): sampled every second, never fewer than 3 Ready nor more than 5 members;
    once the last first member is gone every member is younger than maxAge.

    maxAge must exceed the time a whole rotation takes here (two rounds of delete, create,
    Ready), or the first replacements expire before the last original is replaced: it is four
    times what the pool took to become Ready (one round), and at least 60 s."""
    replicas = 4
    started = time.monotonic()
    pools.create_pool(
        "rot",
        {
            "replicas": replicas,
            "template": {"provider": "local"},
            "strategy": {"maxSurge": 1, "maxUnavailable": 1},
        },
    )
    pools.wait_settled("rot", replicas)
    max_age = max(60, int(4 * (time.monotonic() - started)))
    first = {m["metadata"]["name"] for m in pools.members("rot")}
    pools.custom.patch_namespaced_custom_object(
        e2e_lib.GROUP,
        e2e_lib.VERSION,
        pools.namespace,
        "proxypools",
        "rot",
        {"spec": {"maxAge": "%ds" % max_age}},
    )
    ready_samples, member_samples = [], []
    deadline = time.monotonic() + 2 * max_age + 120
    while time.monotonic() < deadline:  # sampled every second until every first member is gone
        members = pools.members("rot")
        ready_samples.append(_ready_count(pools, "rot"))
        member_samples.append(len(members))
        names = {m["metadata"]["name"] for m in members}
        obj = pools.pool("rot")
        if not names & first and condition(obj, "Ready").get("status") == "True" and len(members) == replicas:
            break
        time.sleep(1)
    else:
        raise AssertionError("rotation did not finish:\n%s\n%s" % (pools.describe("rot"), pools.pool_log()))
    now = time.time()
    ages = [now - _created(m) for m in pools.members("rot")]
    assert min(ready_samples) >= replicas - 1, ready_samples  # never fewer than N - maxUnavailable
    assert max(member_samples) <= replicas + 1, member_samples  # never more than N + maxSurge
    assert all(age < max_age for age in ages), ages
    assert len(ready_samples) > max_age / 2  # it was sampled through the whole rotation
    deleted = [
        e.message
        for e in k8s.CoreV1Api(pools.admin)
        .list_namespaced_event(pools.namespace, field_selector="involvedObject.name=rot")
        .items
        if e.reason == "MemberDeleted"
    ]
    assert deleted and all("MaxAge" in message for message in deleted), deleted


def _created(member: dict) -> float:
    import datetime

    stamp = member["metadata"]["creationTimestamp"].replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(stamp).timestamp()


def test_a_target_whose_provider_leaves_the_file_moves_its_share_to_the_other(pools):
    pools.create_pool(
        "mv",
        {
            "replicas": 3,
            "template": {},
            "spread": SPREAD,
            "strategy": {"maxSurge": 1, "maxUnavailable": 0},
        },
    )
    pools.wait_settled("mv", 3)
    assert _by_provider(pools.ready_members("mv")) == {"local": 2, "second": 1}
    without = dict(
        pools.providers, providers=[p for p in pools.providers["providers"] if p["name"] != "second"]
    )
    pools.controller.write_providers(without)

    def moved(obj):
        ready = pools.ready_members("mv")
        return (
            condition(obj, "SpreadDegraded").get("status") == "True"
            and len(ready) == 3
            and _by_provider(ready) == {"local": 3}
        )

    obj = pools.wait_pool("mv", moved, "the share of target side on local")
    degraded = condition(obj, "SpreadDegraded")
    assert "side" in degraded["message"] and "second" in degraded["message"]
    assert next(t for t in obj["status"]["targets"] if t["name"] == "side")["desired"] == 0
    reasons = {
        e.reason
        for e in k8s.CoreV1Api(pools.admin)
        .list_namespaced_event(pools.namespace, field_selector="involvedObject.name=mv")
        .items
    }
    assert "SpreadDegraded" in reasons
    pools.controller.write_providers(pools.providers)  # back: its share returns, the stuck deletion ends
    pools.wait_pool(
        "mv",
        lambda o: (
            condition(o, "SpreadDegraded").get("status") == "False"
            and _by_provider(pools.ready_members("mv")) == {"local": 2, "second": 1}
            and len(pools.members("mv")) == 3
        ),
        "the split back at 2:1",
        timeout=150,
    )


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"replicas": 2, "template": {}}, "template.provider or at least one spread target"),
        ({"template": {"provider": "local"}, "strategy": {"maxSurge": "lots"}}, "spec.strategy.maxSurge"),
        (
            {"template": {"provider": "local"}, "strategy": {"maxUnavailable": -1}},
            "spec.strategy.maxUnavailable",
        ),
        ({"template": {"provider": "local"}, "maxAge": "soon"}, "spec.maxAge"),
        ({"template": {"provider": "local"}, "replicas": -1}, "spec.replicas"),
        ({"template": {"provider": "local", "auth": {"secretRef": {}}}}, "spec.template.auth.secretRef.name"),
        (
            {"template": {"provider": "local"}, "spread": [{"name": "a", "provider": "x", "weight": -1}]},
            "weight",
        ),
        ({"template": {"provider": "local"}, "bogus": 1}, "spec.bogus"),
    ],
)
def test_the_api_server_rejects_a_bad_pool_naming_the_field(controller_api, kube_namespace, spec, field):
    from kubernetes.client.exceptions import ApiException

    custom = k8s.CustomObjectsApi(controller_api)
    body = {
        "apiVersion": "crawl.example.com/v1alpha1",
        "kind": "ProxyPool",
        "metadata": {"name": "bad"},
        "spec": spec,
    }
    with pytest.raises(ApiException) as caught:
        custom.create_namespaced_custom_object(
            e2e_lib.GROUP, e2e_lib.VERSION, kube_namespace, "proxypools", body, field_validation="Strict"
        )
    assert caught.value.status in (400, 422)
    assert field in caught.value.body, caught.value.body
    assert (
        custom.list_namespaced_custom_object(e2e_lib.GROUP, e2e_lib.VERSION, kube_namespace, "proxypools")[
            "items"
        ]
        == []
    )


def test_what_is_published_reads_back_as_written_so_a_fresh_publisher_writes_nothing(
    controller_api, kube_namespace
):
    """The publisher keeps nothing in the process: it compares what it would write with the
    Service and EndpointSlice its informers hold (and the Secret the API server returns), so
    those must read back equal or every tick would write. With a routable address in the
    EndpointSlice (the other tests' members are loopback: Secret only), a second Publisher over
    informers listed afresh (a restarted controller) writes nothing; a hand edit is put back
    once its watch event reached the cache. Neither Publisher gets a Service or EndpointSlice."""
    from egress_proxies_controller.kube.client import Kube
    from egress_proxies_controller.pool.kube_calls import PoolKube
    from egress_proxies_controller.pool.model import Member, Pool
    from egress_proxies_controller.pool.publish import Publisher

    body = {
        "apiVersion": "crawl.example.com/v1alpha1",
        "kind": "ProxyPool",
        "metadata": {"name": "web"},
        "spec": {"replicas": 0, "template": {"provider": "local", "port": 3128}},
    }
    pool = Pool.from_object(
        k8s.CustomObjectsApi(controller_api).create_namespaced_custom_object(
            e2e_lib.GROUP, e2e_lib.VERSION, kube_namespace, "proxypools", body
        )
    )
    now = time.time()
    members = [
        Member("web-%d" % i, "main", "r", now - 60, True, ip="10.1.2.%d" % i, provider="local", zone="z")
        for i in (1, 2)
    ]
    pool_kube = PoolKube(Kube(controller_api))
    core, discovery = k8s.CoreV1Api(controller_api), k8s.DiscoveryV1Api(controller_api)
    key = "%s/web" % kube_namespace

    def versions() -> list:
        return [
            core.read_namespaced_secret("web-endpoints", kube_namespace).metadata.resource_version,
            core.read_namespaced_service("web", kube_namespace).metadata.resource_version,
            discovery.read_namespaced_endpoint_slice("web", kube_namespace).metadata.resource_version,
        ]

    first = _published_informers(pool_kube, kube_namespace)
    try:
        assert Publisher(pool_kube, first).publish(pool, members, now, ("u", "p")) == []
        written = versions()
    finally:
        _stop(first)
    second = _published_informers(pool_kube, kube_namespace)
    try:
        assert Publisher(pool_kube, second).publish(pool, members, now + 90, ("u", "p")) == []
        assert versions() == written
        edited = discovery.read_namespaced_endpoint_slice("web", kube_namespace)
        edited.endpoints = edited.endpoints[:1]
        discovery.replace_namespaced_endpoint_slice("web", kube_namespace, edited)
        kube_testlib.wait_for(
            "the hand edit in the EndpointSlice cache",
            lambda: len((second["EndpointSlice"].get(key) or {}).get("endpoints") or []) == 1,
        )
        assert Publisher(pool_kube, second).publish(pool, members, now + 95, ("u", "p")) == []
        assert _slice_of(discovery, kube_namespace) == ["10.1.2.1", "10.1.2.2"]
    finally:
        _stop(second)


def _published_informers(pool_kube, namespace: str) -> dict:
    """The pool loop's informers of the Services and EndpointSlices it publishes, synced."""
    from egress_proxies_controller.kube.informer import Informer

    caches = {
        "Service": Informer(
            None, namespace, lambda _k: None, lister=pool_kube.list_services, resource="services"
        ),
        "EndpointSlice": Informer(
            None, namespace, lambda _k: None, lister=pool_kube.list_endpoint_slices, resource="endpointslices"
        ),
    }
    for informer in caches.values():
        threading.Thread(target=informer.run, daemon=True).start()
    for informer in caches.values():
        assert informer.synced.wait(30), "%s informer did not sync" % informer.resource
    return caches


def _stop(caches: dict) -> None:
    for informer in caches.values():
        informer.stop()


def _slice_of(discovery, namespace: str) -> list:
    return sorted(
        a for e in discovery.read_namespaced_endpoint_slice("web", namespace).endpoints for a in e.addresses
    )


def test_the_endpoints_carry_the_auth_secrets_credentials_and_nothing_else_does(pools, origin):
    password = "p@ss:%s" % time.time_ns()
    k8s.CoreV1Api(pools.admin).create_namespaced_secret(
        pools.namespace,
        {"metadata": {"name": "creds"}, "stringData": {"username": "crawler", "password": password}},
    )
    pools.create_pool(
        "auth", {"replicas": 1, "template": {"provider": "local", "auth": {"secretRef": {"name": "creds"}}}}
    )
    obj = pools.wait_settled("auth", 1)
    (url,) = pools.endpoints("auth")[0]
    (member,) = pools.ready_members("auth")
    encoded = password.replace("@", "%40").replace(":", "%3A")
    assert url == "http://crawler:%s@%s:3128" % (encoded, member["status"]["ip"])
    # The request with the URL's credentials goes through (refusing one without them is the
    # Squid side of auth, tested with the Proxy's spec.auth).
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": url}))
    with opener.open("http://127.0.0.1:%d/via-proxy" % origin, timeout=10) as response:
        assert response.status == 200
    assert password not in json.dumps(obj) and encoded not in json.dumps(obj)
    events = k8s.CoreV1Api(pools.admin).list_namespaced_event(pools.namespace).items
    assert all(password not in (e.message or "") and encoded not in (e.message or "") for e in events)
    log = pools.controller.tail(100000)
    assert password not in log and encoded not in log


def _through(url: str, origin_port: int) -> int:
    """The status of a request to the origin through the proxy ``url`` (407 when refused)."""
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": url}))
    try:
        with opener.open("http://127.0.0.1:%d/via-proxy" % origin_port, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_change_of_the_auth_secrets_content_rolls_the_members_under_the_budget(pools, origin):
    """A settled pool of 3 with auth (maxSurge 1, maxUnavailable 1): a new password in the
    Secret replaces every member, never fewer than 2 Ready (sampled every second); at the end
    every listed URL works with the new password, a request without credentials is refused with
    407, the old password is refused, the old credentials copy is gone, and no password is in a
    member, the pool, an Event or the controller's log."""
    core = k8s.CoreV1Api(pools.admin)
    old, new = "old-%d" % time.time_ns(), "new-%d" % time.time_ns()
    core.create_namespaced_secret(
        pools.namespace,
        {"metadata": {"name": "creds"}, "stringData": {"username": "crawler", "password": old}},
    )
    replicas = 3
    pools.create_pool(
        "roll",
        {
            "replicas": replicas,
            "template": {"provider": "local", "auth": {"secretRef": {"name": "creds"}}},
            "strategy": {"maxSurge": 1, "maxUnavailable": 1},
        },
    )
    pools.wait_settled("roll", replicas)
    first = {m["metadata"]["name"] for m in pools.members("roll")}
    (old_copy,) = {m["spec"]["auth"]["secretRef"]["name"] for m in pools.members("roll")}
    assert old_copy.startswith("roll-auth-")
    core.patch_namespaced_secret("creds", pools.namespace, {"stringData": {"password": new}})
    ready_samples = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        members = pools.members("roll")
        ready_samples.append(_ready_count(pools, "roll"))
        urls = pools.endpoints("roll")[0]
        if (
            not {m["metadata"]["name"] for m in members} & first
            and len(members) == replicas
            and len(urls) == replicas
            and all(new in url for url in urls)
        ):
            break
        time.sleep(1)
    else:
        raise AssertionError("the roll did not finish:\n%s\n%s" % (pools.describe("roll"), pools.pool_log()))
    assert min(ready_samples) >= replicas - 1, ready_samples
    urls = pools.endpoints("roll")[0]
    for url in urls:
        assert _through(url, origin) == 200
        address = url.rsplit("@", 1)[1]
        assert _through("http://" + address, origin) == 407
        assert _through("http://crawler:%s@%s" % (old, address), origin) == 407
    kube_testlib.wait_for(
        "the old copy deleted",
        lambda: old_copy not in {s.metadata.name for s in core.list_namespaced_secret(pools.namespace).items},
        timeout=30,
    )
    seen = json.dumps([pools.members("roll"), pools.pool("roll")]) + "".join(
        e.message or "" for e in core.list_namespaced_event(pools.namespace).items
    )
    log = pools.controller.tail(100000)
    for password in (old, new):
        assert password not in seen and password not in log
