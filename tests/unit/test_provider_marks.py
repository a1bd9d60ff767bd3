"""An instance belongs to exactly one provider (issue 28 §2): the gcp and kubernetes providers
mark what they create with their configured name and list only their own, so two providers on one
project or namespace never see each other's instances as theirs. One without the mark (made
before it existed) is listed by every provider, as before: nothing tells which one made it."""

from __future__ import annotations

import json

from fakes.libvirt_fake import FakeDialer, FakeHost
from fakes.not_found_server import NotFoundServer, write_kubeconfig

from ansible_collections.crawl.egress_proxies.plugins.module_utils import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert, labels
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import pod as podlib
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import metadata
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.provider import (
    LibvirtProvider,
)
from unit.gcp_fake_api import instance
from unit.libvirt_support import make as libvirt_make
from unit.libvirt_support import request as libvirt_request
from unit.test_gcp_provider import make, request, scoped
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
    del hosts["h1"].domains[libvirt_request("b").name]  # b's volumes are left without a domain
    assert [i.id for i in first.list_by_tag(Deadline(10))] == [mine]
    assert [i.id for i in second.list_by_tag(Deadline(10))] == [theirs]
