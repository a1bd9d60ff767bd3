"""A port cannot change in place (issue 28 §7) on gcp, kubernetes and libvirt too: each provider
records the port an instance was created for and ``fixed_fields`` reads it back, so
``proxy_instance`` refuses another port instead of reporting ``changed: false`` while the proxy
keeps listening on the old one. The answer comes from what ``get`` already read (no second
call); an instance made before the port was recorded gives ``{}`` (cannot tell), as before."""

from __future__ import annotations

import dataclasses
import json
import types

from fakes.not_found_server import NotFoundServer, write_kubeconfig

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import pod as podlib
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import metadata
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import instances
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.instance_items import Item
from unit.gcp_fake_api import instance
from unit.libvirt_support import make as libvirt_make
from unit.libvirt_support import request as libvirt_request
from unit.test_gcp_provider import NAME, PID, UID, ZONE, make, ours, request
from unit.test_kubernetes_pod import config as kube_config
from unit.test_kubernetes_provider_offline import provider as kube_provider


def _gcp_with_port(port: int):
    """A gcp provider whose fake holds the VM its create made for ``port``."""
    provider, seam = make()
    provider.create(dataclasses.replace(request(), port=port), Deadline(5))
    (_zone, body) = seam.inserted[0]
    item = instance(name=NAME, zone=ZONE, labels=body["labels"], uid_meta=UID)
    item["metadata"] = body["metadata"]
    seam.instances[(ZONE, NAME)] = item
    seam.calls.clear()
    return provider, seam


def test_gcp_records_the_port_at_create_and_reads_it_back_from_the_get():
    provider, seam = _gcp_with_port(3129)
    provider.get(PID, Deadline(5))
    assert provider.fixed_fields(PID, Deadline(5)) == {"port": 3129}
    assert seam.names() == ["get_instance"]  # the get's answer: no second read
    assert provider.fixed_fields(PID, Deadline(5)) == {"port": 3129}  # no get before: read once
    assert seam.names() == ["get_instance", "get_instance"]
    seam.instances[(ZONE, NAME)] = ours()  # made before the port was recorded
    provider.get(PID, Deadline(5))
    assert provider.fixed_fields(PID, Deadline(5)) == {}


def _item(port: int) -> Item:
    return Item(
        index=0,
        where="",
        provider="gcp-test",
        uid=UID,
        name=NAME,
        id="",
        namespace="",
        proxy_name="",
        placement=contract.Placement(zone=ZONE),
        cloud_init="",
        port=port,
        state="present",
        wait=False,
        wait_timeout=60.0,
    )


def test_proxy_instance_refuses_another_port_on_an_existing_gcp_vm():
    """It was ``changed: false`` with nothing said, and the VM kept its port."""
    provider, seam = _gcp_with_port(3129)
    pm = types.SimpleNamespace(
        provider=lambda _name: provider, config=types.SimpleNamespace(installation="prod"), check_mode=False
    )
    converger = instances.Converger(pm, 5.0)
    refused = converger.converge(_item(3128))
    assert refused["failed"] and refused["error_class"] == "permanent", refused
    assert "listens on port 3129, not 3128, and a port cannot change in place" in refused["msg"]
    assert refused["reason"] == "PortFixedAtCreation"  # the controller replaces on it
    assert seam.names() == ["get_instance"]  # one read, nothing inserted, started or deleted
    same = converger.converge(_item(3129))
    assert not same.get("failed") and same["changed"] is False, same


def _pod_json(port: int, with_port: bool = True) -> bytes:
    req = contract.CreateRequest(name="proxy-a", uid="u-a", namespace="crawl", port=port)
    pod = podlib.build_pod(req, "crawl", "default", kube_config(), "k8s-eu")
    if not with_port:  # a Pod built before: no named proxy port
        pod["spec"]["containers"][0].pop("ports")
    pod["status"] = {"phase": "Running"}
    return json.dumps(pod).encode()


def test_kubernetes_reads_the_port_back_from_the_pod_the_get_read(tmp_path):
    assert podlib.fixed_fields(json.loads(_pod_json(3129))) == {"port": 3129}
    assert podlib.fixed_fields(json.loads(_pod_json(3129, with_port=False))) == {}
    server = NotFoundServer(_pod_json(3129), "application/json", status=200)
    try:
        path = str(tmp_path / "kubeconfig")
        write_kubeconfig(path, server.endpoint)
        p = kube_provider(tmp_path, kubeconfig=path)
        p.get("crawl/proxy-a", Deadline(10))
        assert p.fixed_fields("crawl/proxy-a", Deadline(10)) == {"port": 3129}
        assert len(server.requests) == 1  # the get's answer: no second read
        assert p.fixed_fields("crawl/proxy-a", Deadline(10)) == {"port": 3129}  # no get before: read
        assert len(server.requests) == 2
    finally:
        server.close()


def test_libvirt_records_the_port_in_the_domain_marks_and_reads_it_back(image_server):
    provider, _dialer, hosts = libvirt_make(image_server)
    req = dataclasses.replace(libvirt_request("a"), port=3129)
    provider_id = provider.create(req, Deadline(10))
    stored = hosts["h1"].domains[req.name]["metadata"][metadata.namespace("kvm2")]
    assert metadata.parse_element(stored).port == 3129
    provider.get(provider_id, Deadline(10))
    before = len(hosts["h1"].calls)
    assert provider.fixed_fields(provider_id, Deadline(10)) == {"port": 3129}
    assert len(hosts["h1"].calls) == before  # the get's marks: no second read
    assert provider.fixed_fields(provider_id, Deadline(10)) == {"port": 3129}  # no get before: read

    legacy = libvirt_request("legacy")
    hosts["h1"].add_domain(
        legacy.name,
        metadata={metadata.namespace("kvm2"): metadata.element_xml(legacy.uid, metadata.now(), "inst-a")},
    )
    legacy_id = "hosts/h1/domains/" + legacy.name
    provider.get(legacy_id, Deadline(10))
    assert provider.fixed_fields(legacy_id, Deadline(10)) == {}
