"""The kvm2 provider's trace over the in-memory libvirt fake behind the provider's seam (the
contract suite's fast harness; the same guard, host table and image code as against a real
libvirtd) with the base image from a real loopback HTTP server, exported over OTLP/HTTP and
decoded as a collector would (trace_capture.py). Under each ``provider.<op>``: ``libvirt.dial``
(the SSH dial, once per host and run), one ``libvirt.<method>`` per RPC of the seam, and for
the first create ``libvirt.download.open`` and ``libvirt.download`` (the image, whose volume
RPCs are its children). The cloud-init and the image URL's password (sentinels) appear in no
exported byte: RPC arguments are identifiers, an XML or byte argument only its size."""

from __future__ import annotations

import uuid

import pytest
from docs.trace_tree import assert_trace_as_drawn
from trace_capture import assert_no_secret, check_tree, children, exporting, render

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from contract.libvirt_fake_backend import fake_libvirt_backend
from contract.suite import dl

backend = fake_libvirt_backend


def test_create_get_delete_hold_the_dial_each_rpc_and_the_download(backend):
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    password = "pw%s" % uuid.uuid4().hex
    url = backend.server.url("/base.qcow2").replace("http://", "http://crawler:%s@" % password)
    provider = backend.build(image_url=url)
    req = backend.request(str(uuid.uuid4()), cloud_init="#cloud-config\n# %s\n" % sentinel)
    with exporting() as (receiver, _root):
        provider_id = provider.create(req, dl(backend))
        provider.get(provider_id, dl(backend))
        provider.delete(provider_id, dl(backend))
        with pytest.raises(errors.ProviderError):
            provider.get(provider_id, dl(backend))  # no such domain: its libvirt code on the RPC span
    spans = list(receiver.spans)
    print(render(spans))
    by_id = check_tree(spans)
    assert_trace_as_drawn("docs/libvirt-provider.md", "libvirt.dial", spans)  # the page's tree is this trace
    name = provider_id.rsplit("/", 1)[-1]
    ops = [s for s in spans if s.name.startswith("provider.")]
    assert [o.name for o in ops] == ["provider.create", "provider.get", "provider.delete", "provider.get"]
    for op in ops:
        assert by_id[op.parent_id].name == "module.proxy_instance"
        assert children(spans, op), "%s made no backend span" % op.name
    create = children(spans, ops[0])
    dials = [s for s in spans if s.name == "libvirt.dial"]
    assert [by_id[d.parent_id].name for d in dials] == ["provider.create"]  # pooled for the run
    assert (
        dials[0].attributes["libvirt.host"] == "hv1" and dials[0].attributes["libvirt.address"] == "127.0.0.1"
    )
    names = [s.name for s in create]
    assert {
        "libvirt.domain_define",
        "libvirt.domain_start",
        "libvirt.download.open",
        "libvirt.download",
    } <= set(names)
    opened = next(s for s in create if s.name == "libvirt.download.open")
    assert opened.attributes["http.response.status_code"] == 200
    assert (
        opened.attributes["url.host"] == "127.0.0.1"
        and opened.attributes["libvirt.sha256_configured"] is True
    )
    download = next(s for s in create if s.name == "libvirt.download")
    assert download.attributes["libvirt.bytes"] > 0
    assert {c.name for c in children(spans, download)} >= {"libvirt.volume_create", "libvirt.volume_upload"}
    for rpc in [s for s in spans if s.attributes.get("libvirt.rpc")]:
        assert rpc.name == "libvirt.%s" % rpc.attributes["libvirt.rpc"]
        assert rpc.attributes["libvirt.host"] == "hv1" and rpc.attributes["duration_ms"] >= 0
    define = next(s for s in create if s.name == "libvirt.domain_define")
    assert define.attributes["libvirt.args"].startswith("<")  # the XML: its size only
    assert any(name in s.attributes.get("libvirt.args", "") for s in children(spans, ops[1]))
    assert "libvirt.domain_undefine" in {s.name for s in children(spans, ops[2])}
    missing = [s for s in children(spans, ops[3]) if "libvirt.error_code" in s.attributes]
    assert missing and missing[0].attributes["libvirt.error_code"] == 42  # VIR_ERR_NO_DOMAIN
    assert_no_secret(receiver, sentinel, password, "cloud-config")
