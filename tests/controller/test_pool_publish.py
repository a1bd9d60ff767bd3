"""What a pool publishes, without a cluster: the endpoints Secret's two keys (credentials
percent-encoded in the URLs, nothing else carrying them), which addresses an EndpointSlice may
hold, and the Publisher's rules (an object the pool does not own is never overwritten; nothing is
rewritten while what it says is unchanged)."""

from __future__ import annotations

import base64
import itertools
import json

from egress_proxies_controller.kube.client import ApiException
from egress_proxies_controller.kube.informer import Informer
from egress_proxies_controller.pool.model import Member, Pool
from egress_proxies_controller.pool.publish import Publisher, render, sliceable

NOW = 1_800_000_000.0


def member(name, ip, ready=True, created=NOW - 30) -> Member:
    return Member(name, "a", "r", created, ready, ip=ip, port=3128, provider="local", zone="z1")


def test_render_lists_ready_members_only_with_credentials_encoded():
    members = [member("b", "10.0.0.2"), member("a", "10.0.0.1"), member("c", "10.0.0.3", ready=False)]
    data = render(members, ("crawler", "p@ss:w/rd"), NOW)
    assert data["proxies.txt"] == (
        "http://crawler:p%40ss%3Aw%2Frd@10.0.0.1:3128\nhttp://crawler:p%40ss%3Aw%2Frd@10.0.0.2:3128\n"
    )
    entries = json.loads(data["proxies.json"])
    assert [e["address"] for e in entries] == ["10.0.0.1", "10.0.0.2"]
    assert entries[0] == {
        "name": "a",
        "address": "10.0.0.1",
        "port": 3128,
        "provider": "local",
        "zone": "z1",
        "createdAt": "2027-01-15T07:59:30Z",
        "age": 30,
    }
    assert "p@ss" not in data["proxies.json"] and "crawler" not in data["proxies.json"]
    assert render(members, None, NOW)["proxies.txt"].splitlines()[0] == "http://10.0.0.1:3128"


def test_each_member_is_listed_with_its_own_credentials():
    """During a roll after a credentials change, old and new members have different ones."""
    members = [member("a", "10.0.0.1"), member("b", "10.0.0.2")]
    creds = {"a": ("crawler", "old"), "b": ("crawler", "new")}
    data = render(members, lambda m: creds[m.name], NOW)
    assert data["proxies.txt"] == "http://crawler:old@10.0.0.1:3128\nhttp://crawler:new@10.0.0.2:3128\n"


def test_only_routable_ipv4_addresses_go_into_an_endpoint_slice():
    assert sliceable("10.1.2.3") and sliceable("34.76.1.2")
    assert not sliceable("127.3.4.5") and not sliceable("169.254.1.1") and not sliceable("")
    assert not sliceable("::1") and not sliceable("not-an-ip")


WATCHED = ("Service", "EndpointSlice")


class FakeKube:
    """The PoolKube surface the Publisher uses, holding objects by (kind, name); a Service's or
    EndpointSlice's write reaches its (real) informer's cache as its watch event, at once."""

    def __init__(self):
        self.objects, self.writes, self.reads = {}, [], []
        self.credentials = ("u", "secret-pass")
        self.caches = {kind: Informer(None, None, lambda _key: None, lister=list) for kind in WATCHED}
        self.versions = itertools.count(1)

    def read(self, kind, _namespace, name):
        self.reads.append(kind)
        obj = self.objects.get((kind, name))
        return json.loads(json.dumps(obj)) if obj else None

    def create(self, kind, _namespace, body):
        if (kind, body["metadata"]["name"]) in self.objects:
            raise ApiException(status=409, reason="AlreadyExists")
        self.writes.append(("create", kind))
        return self._store(kind, body, "ADDED")

    def replace(self, kind, _namespace, body):
        self.writes.append(("replace", kind))
        return self._store(kind, body, "MODIFIED")

    def _store(self, kind: str, body: dict, event: str) -> dict:
        meta = dict(
            body["metadata"], namespace="ns", uid="u-" + kind, resourceVersion="v%d" % next(self.versions)
        )
        obj = self.objects[(kind, meta["name"])] = json.loads(json.dumps(dict(body, metadata=meta)))
        if kind in self.caches:
            self.caches[kind].apply_event(event, json.loads(json.dumps(obj)))
        return obj


def publisher(kube: FakeKube) -> Publisher:
    return Publisher(kube, kube.caches)


def pool(auth=True) -> Pool:
    template = {"port": 3128, "auth": {"secretRef": {"name": "creds"}}} if auth else {"port": 3128}
    return Pool.from_object(
        {"metadata": {"name": "web", "namespace": "ns", "uid": "pool-uid"}, "spec": {"template": template}}
    )


def test_publisher_creates_then_rewrites_only_on_change():
    kube = FakeKube()
    pub = publisher(kube)
    members = [member("a", "10.0.0.1")]

    def creds(_member):
        return kube.credentials

    assert pub.publish(pool(), members, NOW, creds) == []
    assert sorted(kube.writes) == [("create", "EndpointSlice"), ("create", "Secret"), ("create", "Service")]
    secret = kube.objects[("Secret", "web-endpoints")]
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "pool-uid"
    text = base64.b64decode(secret["data"]["proxies.txt"]).decode()
    assert text == "http://u:secret-pass@10.0.0.1:3128\n"
    slice_ = kube.objects[("EndpointSlice", "web")]
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    assert [e["addresses"] for e in slice_["endpoints"]] == [["10.0.0.1"]]
    assert kube.objects[("Service", "web")]["spec"]["clusterIP"] == "None"
    assert "selector" not in kube.objects[("Service", "web")]["spec"]
    kube.writes.clear()
    pub.publish(pool(), members, NOW + 5, creds)  # only the age moved: nothing is written
    assert kube.writes == []
    kube.reads.clear()
    publisher(kube).publish(pool(), members, NOW + 5, creds)  # nor by another publisher: none kept
    assert kube.writes == [] and kube.reads == ["Secret"]  # the others from their caches
    pub.publish(pool(), [*members, member("b", "10.0.0.2")], NOW + 6, creds)
    assert sorted(kube.writes) == [("replace", "EndpointSlice"), ("replace", "Secret")]


def test_publisher_never_overwrites_an_object_the_pool_does_not_own():
    kube = FakeKube()
    kube.objects[("Secret", "web-endpoints")] = {
        "metadata": {"name": "web-endpoints", "resourceVersion": "3"}
    }
    kube.objects[("Service", "web")] = {"metadata": {"name": "web", "resourceVersion": "3"}}
    problems = publisher(kube).publish(pool(auth=False), [member("a", "10.0.0.1")], NOW)
    assert problems == [  # the Service has no pool label: not in its cache, its create is refused
        "Secret web-endpoints exists and is not this pool's: left as it is",
        "Service web exists and is not this pool's: left as it is",
    ]
    assert ("replace", "Secret") not in kube.writes


def test_an_unreadable_auth_secret_publishes_nothing_and_names_no_value():
    kube = FakeKube()

    def fail(_member):
        raise LookupError("auth Secret ns/creds has no key 'password'")

    problems = publisher(kube).publish(pool(), [member("a", "10.0.0.1")], NOW, fail)
    assert problems == ["endpoints not published: auth Secret ns/creds has no key 'password'"]
    assert kube.writes == []
