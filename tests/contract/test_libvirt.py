"""The ``kvm2`` provider against a real libvirtd over a real sshd: the conformance suite, a full
lifecycle, ``kvm`` and ``kvm2`` side by side, and the faults: sshd stopped mid-run, a wrong
host key, a pool too small, a sha256 mismatch, a download cut off."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ProviderError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import ids
from contract import libvirt_fixtures
from contract.libvirt_backend import LibvirtContractBackend
from contract.suite import ContractSuite

pytestmark = pytest.mark.libvirt

# The shared hypervisor fixtures (one host per test process).
libvirt_host = libvirt_fixtures.libvirt_host
image_host = libvirt_fixtures.image_host
backend = libvirt_fixtures.backend


class TestLibvirtContract(ContractSuite):
    """Every contract rule, against real libvirt domains and volumes."""


def dl(seconds=60.0):
    return Deadline(seconds)


def klass(call) -> str:
    with pytest.raises(ProviderError) as exc_info:
        call()
    return errors.class_of(exc_info.value)


def instance_volumes(host, name: str) -> list:
    return [v for v in host.volumes() if v.startswith(name + ".")]


def test_full_lifecycle(backend):
    host, provider = backend.host, backend.provider
    req = backend.request(str(uuid.uuid4()))
    timings = {}
    start = time.monotonic()
    provider_id = provider.create(req, dl())
    timings["create"] = time.monotonic() - start
    assert provider_id == "hosts/hv1/domains/%s" % req.name
    dom = host.direct().lookupByName(req.name)
    assert dom.isActive() == 1
    assert sorted(instance_volumes(host, req.name)) == sorted(ids.instance_volumes(req.name, "kvm2"))
    start = time.monotonic()
    assert provider.create(req, dl()) == provider_id
    timings["create again"] = time.monotonic() - start
    got = provider.get(provider_id, dl())
    assert (got.state, got.ip, got.uid) == (contract.PROVISIONING, "", req.uid)  # boots nothing: no address
    assert [i.id for i in provider.list_by_tag(dl()) if i.name == req.name] == [provider_id]
    start = time.monotonic()
    provider.delete(provider_id, dl())
    timings["delete"] = time.monotonic() - start
    provider.delete(provider_id, dl())
    assert klass(lambda: provider.get(provider_id, dl())) == errors.NOT_FOUND
    assert instance_volumes(host, req.name) == []
    # the base stays cached: no user left, but the catalogue still names it
    assert ids.base_volume(backend.images.sha256[: ids.DIGEST_CHARS]) in host.volumes()
    assert provider.list_by_tag(dl()) == []
    print("lifecycle timings (s): %s" % {k: round(v, 3) for k, v in timings.items()})


def test_kvm_and_kvm2_never_adopt_each_others_domains(backend):
    kvm = LibvirtContractBackend(backend.host, backend.images, type_name="kvm")
    try:
        req = backend.request(str(uuid.uuid4()))
        kvm_id = kvm.provider.create(req, dl())
        assert klass(lambda: backend.provider.create(req, dl())) == errors.PERMANENT
        assert klass(lambda: backend.provider.delete(kvm_id, dl())) == errors.PERMANENT
        assert [i.id for i in backend.provider.list_by_tag(dl())] == []
        assert [i.id for i in kvm.provider.list_by_tag(dl())] == [kvm_id]
        assert backend.host.direct().lookupByName(req.name).isActive() == 1
    finally:
        kvm.teardown()


def test_paused_domain_is_resumed_by_create(backend):
    req = backend.request(str(uuid.uuid4()))
    provider_id = backend.provider.create(req, dl())
    backend.force_unknown_state(provider_id)
    assert backend.provider.get(provider_id, dl()).state == contract.STOPPED
    backend.provider.create(req, dl())
    assert backend.host.direct().lookupByName(req.name).state()[0] == 1  # running


def test_volumes_left_without_a_domain_are_listed_and_collected(backend):
    req = backend.request(str(uuid.uuid4()))
    provider_id = backend.provider.create(req, dl())
    dom = backend.host.direct().lookupByName(req.name)
    dom.destroy()
    dom.undefine()
    (left,) = [i for i in backend.provider.list_by_tag(dl()) if i.name == req.name]
    assert (left.id, left.state, left.uid) == (provider_id, contract.TERMINATED, req.uid)
    backend.provider.delete(left.id, dl())
    assert instance_volumes(backend.host, req.name) == []


# -- faults ----------------------------------------------------------------------------------


def test_sshd_stopped_mid_create_is_transient_leaks_nothing_and_retries(backend, image_host):
    """The image download is held half-sent while sshd (and the provider's session) dies."""
    path, data, sha256 = image_host.distinct("held")
    marker = ids.base_marker_volume(sha256[: ids.DIGEST_CHARS])
    sent, release = threading.Event(), threading.Event()
    image_host.server.hold[path] = (len(data) // 2, sent, release)
    provider = backend.build(images={"held": {"url": image_host.server.url(path), "sha256": sha256}})
    req = backend.request(str(uuid.uuid4()), image="held")
    outcome = {}

    def create():
        try:
            provider.create(req, dl())
            outcome["class"] = "ok"
        except ProviderError as exc:
            outcome["class"] = errors.class_of(exc)

    worker = threading.Thread(target=create)
    worker.start()
    assert sent.wait(30), "the download never started"
    backend.host.stop_sshd()
    release.set()
    worker.join(60)
    assert outcome["class"] == errors.TRANSIENT
    assert klass(lambda: provider.list_by_tag(dl())) == errors.TRANSIENT  # cannot dial: no partial list
    backend.host.start_sshd()
    del image_host.server.hold[path]
    volumes = backend.host.volumes()
    assert marker not in volumes  # a cut-off image is never trusted
    assert not any(v.startswith(req.name + ".") and not v.endswith(".marks") for v in volumes)
    # what was left (at most the marks volume) is visible to GC and deleted by delete
    for instance in provider.list_by_tag(dl()):
        assert instance.name == req.name and instance.state == contract.TERMINATED
    provider_id = provider.create(req, dl())  # retried cleanly on a fresh connection
    assert marker in backend.host.volumes()
    provider.delete(provider_id, dl())
    assert instance_volumes(backend.host, req.name) == []


def test_wrong_host_key_is_permanent(backend):
    provider = backend.build(knownHostsFile=backend.host.write_wrong_known_hosts())
    req = backend.request(str(uuid.uuid4()))
    assert klass(lambda: provider.create(req, dl())) == errors.PERMANENT
    assert klass(lambda: provider.list_by_tag(dl())) == errors.PERMANENT
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (False, contract.REASON_UNAUTHORIZED)
    assert instance_volumes(backend.host, req.name) == []


def test_fixed_known_hosts_is_picked_up_without_restart(backend, tmp_path):
    """The key and known_hosts are read on every dial: fixing the file fixes the same provider."""
    known = tmp_path / "known_hosts"
    known.write_text(backend.host.known_hosts_line("other_key"))
    provider = backend.build(knownHostsFile=str(known))
    assert klass(lambda: provider.list_by_tag(dl())) == errors.PERMANENT
    known.write_text(backend.host.known_hosts_line("host_key"))
    assert provider.list_by_tag(dl()) == []


def test_insecure_ignore_host_key_connects_and_warns(backend, caplog):
    with caplog.at_level("WARNING"):
        provider = backend.build(knownHostsFile="", insecureIgnoreHostKey=True)
    assert "insecureIgnoreHostKey" in caplog.text
    assert provider.list_by_tag(dl()) == []


def test_unknown_key_is_permanent(backend):
    provider = backend.build(sshKeyFile=backend.host.key.replace("client_key", "other_key"))
    assert klass(lambda: provider.list_by_tag(dl())) == errors.PERMANENT


def test_pool_too_small_is_quota_exceeded_before_anything_is_created(backend):
    pool = backend.host.direct().storagePoolLookupByName(backend.host.pool)
    available_gib = pool.info()[3] // 1024**3
    provider = backend.build(diskSizeGb=int(available_gib) + 1)
    req = backend.request(str(uuid.uuid4()))
    before = backend.host.volumes()
    assert klass(lambda: provider.create(req, dl())) == errors.QUOTA_EXCEEDED
    assert backend.host.volumes() == before
    assert [d.name() for d in backend.host.direct().listAllDomains(0) if d.name() == req.name] == []


def test_sha256_mismatch_is_permanent_and_caches_nothing(backend, image_host):
    provider = backend.build(images={"bad": {"url": image_host.url, "sha256": "0" * 64}})
    req = backend.request(str(uuid.uuid4()), image="bad")
    assert klass(lambda: provider.create(req, dl())) == errors.PERMANENT
    volumes = backend.host.volumes()
    assert not [v for v in volumes if v.startswith(ids.base_volume("0" * ids.DIGEST_CHARS))]
    assert [d for d in backend.host.direct().listAllDomains(0) if d.name() == req.name] == []


def test_download_cut_off_is_transient_unmarked_and_retried_cleanly(backend, image_host):
    path, data, sha256 = image_host.distinct("cut")
    base = ids.base_volume(sha256[: ids.DIGEST_CHARS])
    image_host.server.cut[path] = len(data) // 3
    provider = backend.build(images={"cut": {"url": image_host.server.url(path), "sha256": sha256}})
    req = backend.request(str(uuid.uuid4()), image="cut")
    assert klass(lambda: provider.create(req, dl())) == errors.TRANSIENT
    assert base + ids.MARKER_SUFFIX not in backend.host.volumes()
    del image_host.server.cut[path]
    provider_id = provider.create(req, dl())
    assert {base, base + ids.MARKER_SUFFIX} <= set(backend.host.volumes())
    assert image_host.server.requests[path] == 2
    provider.delete(provider_id, dl())


def test_host_removed_from_config_get_not_configured_delete_done(backend):
    """Blueprint §2 and issue 14: Get can never resolve it (Permanent HostNotConfigured); Delete
    has nothing it could reach and is done, so deletion of its Proxy can finish; with the host
    back, GC collects the domain (the fault matrix's ops-host-removed)."""
    gone = "hosts/decommissioned/domains/proxy-aaaaaaaaaaaaaaaa"
    with pytest.raises(errors.ProviderError) as caught:
        backend.provider.get(gone, dl())
    assert (caught.value.error_class, caught.value.reason) == (
        errors.PERMANENT,
        errors.REASON_HOST_NOT_CONFIGURED,
    )
    backend.provider.delete(gone, dl())


def test_check_reports_host_details(backend):
    (status,) = backend.provider.check(dl())
    assert (status.target, status.ready, status.reason) == ("hv1", True, contract.REASON_REACHABLE)
    details = status.details
    assert details["poolState"] == "running" and details["pool"] == backend.host.pool
    assert details["libvirtVersion"].count(".") == 2 and details["hostname"]
    assert details["poolAvailableGiB"] > 0 and details["memoryAvailableMiB"] > 0
