"""An instance belongs to exactly one provider (issue 28 §2): the gcp and kubernetes providers
mark what they create with their configured name and list only their own, so two providers on one
project or namespace never see each other's instances as theirs. One without the mark (made
before it existed) is listed by every provider, as before: nothing tells which one made it."""

from __future__ import annotations

import json

import pytest
from fakes.libvirt_fake import FakeDialer, FakeHost
from fakes.not_found_server import NotFoundServer, write_kubeconfig

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import ownership
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert, labels
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.instance import to_instance
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import pod as podlib
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import metadata
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.provider import (
    LibvirtProvider,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import instances
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.instance_items import Item
from unit.gcp_fake_api import api_error, instance
from unit.libvirt_support import make as libvirt_make
from unit.libvirt_support import request as libvirt_request
from unit.test_gcp_provider import NAME, PID, UID, ZONE, make, request, scoped
from unit.test_kubernetes_pod import config as kube_config
from unit.test_kubernetes_pod import request as kube_request
from unit.test_kubernetes_provider_offline import provider as kube_provider


def test_gcp_marks_its_instances_with_the_provider_name():
    provider, _seam = make()
    body = insert.build_instance(request(), provider.settings)
    assert body["labels"][names.LABEL_PROVIDER] == "gcp-test"


def test_gcp_lists_only_its_own_and_unmarked_instances():
    provider, seam = make()
    mine = instance(name="proxy-mine", labels=labels.marks("u1", "prod", "gcp-test"))
    legacy = instance(name="proxy-legacy", labels=labels.marks("u2", "prod"))
    other = instance(name="proxy-other", labels=labels.marks("u3", "prod", "gcp-other"))
    seam.pages = [{"items": {"zones/us-central1-a": scoped(mine, legacy, other)}}]
    found = provider.list_by_tag(Deadline(5))
    assert sorted(i.name for i in found) == ["proxy-legacy", "proxy-mine"]


def test_kubernetes_marks_its_pods_with_the_provider_name():
    pod = podlib.build_pod(kube_request(), "crawl", "default", kube_config(), "k8s-eu")
    assert pod["metadata"]["labels"][names.LABEL_PROVIDER] == "k8s-eu"


def _pod(name: str, provider: str) -> dict:
    return {
        "metadata": {
            "name": name,
            "namespace": "crawl",
            "labels": names.marks("u-" + name, "default", provider),
        },
        "status": {"phase": "Running"},
    }


def test_kubernetes_lists_only_its_own_and_unmarked_pods(tmp_path):
    body = {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {},
        "items": [_pod("mine", "k8s-eu"), _pod("legacy", ""), _pod("other", "k8s-other")],
    }
    server = NotFoundServer(json.dumps(body).encode(), "application/json", status=200)
    try:
        path = str(tmp_path / "kubeconfig")
        write_kubeconfig(path, server.endpoint)
        found = kube_provider(tmp_path, kubeconfig=path).list_by_tag(Deadline(10))
    finally:
        server.close()
    assert sorted(i.name for i in found) == ["legacy", "mine"]


def test_libvirt_providers_on_one_host_each_list_only_their_own(image_server):
    """Two providers of one type on one host (another name, the same block): each lists the
    domains it made and those without a provider mark, never the other's, leftovers included."""
    shared = [FakeHost("h1")]
    first, _dialer, hosts = libvirt_make(image_server, fake_hosts=shared)
    second = LibvirtProvider(
        "kvm2", "hv-other", "inst-a", first.config, dialer=FakeDialer(*shared), budgets=first.budgets
    )
    mine = first.create(libvirt_request("a"), Deadline(10))
    theirs = second.create(libvirt_request("b"), Deadline(10))
    marks = metadata.parse_element(
        hosts["h1"].domains[libvirt_request("a").name]["metadata"][metadata.namespace("kvm2")]
    )
    assert marks.provider == "hv-kvm2"
    assert [i.id for i in first.list_by_tag(Deadline(10))] == [mine]
    assert [i.id for i in second.list_by_tag(Deadline(10))] == [theirs]
    with pytest.raises(errors.ProviderError) as caught:  # not second's: it has no such domain
        second.get(mine, Deadline(10))
    assert caught.value.error_class == errors.NOT_FOUND
    assert first.get(mine, Deadline(10)).made_by == "hv-kvm2"  # read back: what ownership checks
    del hosts["h1"].domains[libvirt_request("b").name]  # b's volumes are left without a domain
    assert [i.id for i in first.list_by_tag(Deadline(10))] == [mine]
    assert [i.id for i in second.list_by_tag(Deadline(10))] == [theirs]


def test_gcp_and_kubernetes_read_back_the_provider_that_made_an_instance(tmp_path):
    other = instance(name="proxy-other", labels=labels.marks("u3", "prod", "gcp-other"))
    legacy = instance(name="proxy-legacy", labels=labels.marks("u2", "prod"))
    assert to_instance(other, "us-central1-a", "external").made_by == "gcp-other"
    assert to_instance(legacy, "us-central1-a", "external").made_by == ""
    assert kube_provider(tmp_path).inner._instance(_pod("other", "k8s-other")).made_by == "k8s-other"


class _Backend:
    """One provider on a shared backend whose ``get`` answers with an instance made by
    ``made_by`` (another provider of the same project, namespace, host or stateDir)."""

    def __init__(self, made_by: str):
        self.found = contract.Instance(
            id="zones/z/instances/proxy-a",
            name="proxy-a",
            uid="u1",
            state=contract.RUNNING,
            ip="10.0.0.2",
            installation="prod",
            made_by=made_by,
        )
        self.calls = []
        self.name, self.supports_auth = "g2", False

    def id_for(self, name, placement, namespace=""):
        return "zones/z/instances/" + name

    def get(self, provider_id, deadline):
        self.calls.append("get")
        return self.found

    def fixed_fields(self, provider_id, deadline):
        return {}

    def delete(self, provider_id, deadline):
        self.calls.append("delete")


def _item(state: str) -> Item:
    return Item(
        index=0,
        where="",
        provider="g2",
        uid="u1",
        name="proxy-a",
        id="",
        namespace="",
        proxy_name="",
        placement=contract.Placement(),
        cloud_init="",
        port=3128,
        state=state,
        wait=False,
        wait_timeout=60.0,
    )


def test_another_providers_instance_is_neither_adopted_nor_deleted():
    """Issue 28 §2: with two providers on one backend, an instance belongs to the one that made
    it. Local refused the other's in its own calls; on gcp, kubernetes and libvirt ``present``
    through the second provider adopted it (same uid) and ``absent`` deleted it. Now both are
    refused, naming the owner; an instance made before providers were recorded is anyone's."""
    import types

    for made_by, refused in (("g1", True), ("g2", False), ("", False)):
        backend = _Backend(made_by)
        pm = types.SimpleNamespace(
            provider=lambda _name, b=backend: b,
            config=types.SimpleNamespace(installation="prod"),
            check_mode=False,
        )
        converger = instances.Converger(pm, 5.0)
        present, absent = converger.converge(_item("present")), converger.converge(_item("absent"))
        assert present["failed"] is refused and absent["failed"] is refused, (made_by, present, absent)
        assert ("delete" in backend.calls) is not refused
        if refused:
            for result in (present, absent):
                assert result["error_class"] == "permanent"
                assert "belongs to provider 'g1', not g2 (they share a backend)" in result["msg"], result
    instance_of_g1 = _Backend("g1").found
    assert ownership.adoption_refusal(instance_of_g1, "u1", "prod") == ""  # no provider asked: as before


# -- issue 28 §2 inside each provider: its own get, create and delete ------------------------

OTHERS = "belongs to provider %r, not %s (they share a backend)"


def _error(call) -> errors.ProviderError:
    with pytest.raises(errors.ProviderError) as caught:
        call()
    return caught.value


def test_gcp_itself_never_serves_another_providers_instance():
    """Like the local provider: through provider gcp-test, an instance gcp-other made in the same
    project is not found by get, not adopted by create (same uid) and not deleted; one made
    before the provider mark existed is still read and deleted as before."""
    provider, seam = make()
    seam.instances[(ZONE, NAME)] = instance(
        name=NAME, zone=ZONE, labels=labels.marks(UID, "prod", "gcp-other"), uid_meta=UID
    )
    err = _error(lambda: provider.get(PID, Deadline(5)))
    assert err.error_class == errors.NOT_FOUND and OTHERS % ("gcp-other", "gcp-test") in str(err), err
    err = _error(lambda: provider.delete(PID, Deadline(5)))
    assert err.error_class == errors.PERMANENT and OTHERS % ("gcp-other", "gcp-test") in str(err), err
    seam.fail("insert_instance", api_error(409, "alreadyExists"))
    err = _error(lambda: provider.create(request(), Deadline(5)))
    assert err.error_class == errors.PERMANENT and OTHERS % ("gcp-other", "gcp-test") in str(err), err
    assert "delete_instance" not in seam.names() and "start_instance" not in seam.names()

    seam.instances[(ZONE, NAME)] = instance(
        name=NAME, zone=ZONE, labels=labels.marks(UID, "prod"), uid_meta=UID
    )
    assert provider.get(PID, Deadline(5)).made_by == ""
    provider.delete(PID, Deadline(5))
    assert "delete_instance" in seam.names()


def _status(code: int, reason: str) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": reason,
            "message": 'pods "other" %s' % reason,
            "details": {"name": "other", "kind": "pods"},
            "code": code,
        }
    ).encode()


def _pod_server(made_by: str) -> NotFoundServer:
    """Answers every GET with the Pod ``other`` made by ``made_by``, and a create with 409."""
    pod = dict(_pod("other", made_by), kind="Pod", apiVersion="v1")
    return NotFoundServer(
        json.dumps(pod).encode(),
        "application/json",
        status=200,
        by_method={"POST": (409, _status(409, "AlreadyExists"))},
    )


def test_kubernetes_itself_never_serves_another_providers_pod(tmp_path):
    """A Pod k8s-other made in the namespace: k8s-eu's get answers NotFound, its create (409,
    same uid) refuses to adopt it and its delete refuses, sending no DELETE; an unmarked Pod
    (made before the mark existed) is still read."""
    path = str(tmp_path / "kubeconfig")
    server = _pod_server("k8s-other")
    try:
        write_kubeconfig(path, server.endpoint)
        p = kube_provider(tmp_path, kubeconfig=path)
        req = contract.CreateRequest(name="other", uid="u-other", namespace="crawl")
        for call, error_class in (
            (lambda: p.get("crawl/other", Deadline(10)), errors.NOT_FOUND),
            (lambda: p.delete("crawl/other", Deadline(10)), errors.PERMANENT),
            (lambda: p.create(req, Deadline(10)), errors.PERMANENT),
        ):
            err = _error(call)
            assert err.error_class == error_class and OTHERS % ("k8s-other", "k8s-eu") in str(err), err
        sent = [method for method, _path in server.requests]
        assert "DELETE" not in sent and sent.count("POST") == 1, sent  # the Pod's create only
    finally:
        server.close()
    server = _pod_server("")
    try:
        write_kubeconfig(path, server.endpoint)
        assert kube_provider(tmp_path, kubeconfig=path).get("crawl/other", Deadline(10)).uid == "u-other"
    finally:
        server.close()


def test_libvirt_itself_never_serves_another_providers_domain(image_server):
    """Two providers of one type on one host: the second's get answers NotFound for the first's
    domain, its create (same uid) refuses to adopt it and its delete refuses, leaving the domain
    and its volumes; a domain without a provider mark is still read by either."""
    shared = [FakeHost("h1")]
    first, _dialer, hosts = libvirt_make(image_server, fake_hosts=shared)
    second = LibvirtProvider(
        "kvm2", "hv-other", "inst-a", first.config, dialer=FakeDialer(*shared), budgets=first.budgets
    )
    req = libvirt_request("a")
    mine = first.create(req, Deadline(10))
    volumes = sorted(hosts["h1"].volumes())
    for call, error_class in (
        (lambda: second.get(mine, Deadline(10)), errors.NOT_FOUND),
        (lambda: second.delete(mine, Deadline(10)), errors.PERMANENT),
        (lambda: second.create(req, Deadline(10)), errors.PERMANENT),
    ):
        err = _error(call)
        assert err.error_class == error_class and OTHERS % ("hv-kvm2", "hv-other") in str(err), err
    assert req.name in hosts["h1"].domains and sorted(hosts["h1"].volumes()) == volumes
    assert first.get(mine, Deadline(10)).uid == req.uid

    legacy = libvirt_request("legacy")
    hosts["h1"].add_domain(
        legacy.name,
        metadata={
            metadata.namespace("kvm2"): metadata.element_xml(legacy.uid, metadata.now(), "inst-a"),
        },
    )
    assert second.get("hosts/h1/domains/" + legacy.name, Deadline(10)).uid == legacy.uid
