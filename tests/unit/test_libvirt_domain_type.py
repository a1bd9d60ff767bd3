"""The libvirt health check tells an admin when a host cannot run guests of its domainType
(plugins/module_utils/providers/libvirt/domain_type.py), over the in-memory fake."""

from __future__ import annotations

import pytest
from fakes.libvirt_fake import FakeHost, err

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ProviderError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import backend as b
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import metadata
from unit.libvirt_support import make, request

MSR_FAILURE = (
    "internal error: qemu unexpectedly closed the monitor: qemu-system-x86_64: error: failed to set MSR "
    "0x10a to 0x69\nqemu-system-x86_64: ../../target/i386/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion failed."
)


def dl():
    return Deadline(10.0)


@pytest.fixture
def make_host(image_server, monkeypatch):
    def build(domain_type="kvm", **fake):
        host = FakeHost("h1")
        for key, value in fake.items():
            setattr(host, key, value)
        from unit import libvirt_support

        original = libvirt_support.block

        def with_type(server, hosts=("h1",), **overrides):
            data = original(server, hosts, **overrides)
            data["hosts"] = [dict(h, domainType=domain_type) for h in data["hosts"]]
            return data

        monkeypatch.setattr(libvirt_support, "block", with_type)
        provider, _dialer, _hosts = make(image_server, fake_hosts=[host])
        return provider, host

    return build


def test_kvm_host_with_usable_capabilities_is_ready(make_host):
    provider, _host = make_host("kvm")
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (True, "Reachable")
    assert status.details["domainType"] == "kvm"


def test_no_kvm_on_the_host_is_domain_type_unsupported_with_the_fix(make_host):
    no_device = err(b.ERR_SYSTEM_ERROR, "Unable to open /dev/kvm: No such file or directory")
    provider, host = make_host("kvm", max_vcpus={"kvm": no_device, "qemu": 16})
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (False, "DomainTypeUnsupported")
    assert "/dev/kvm" in status.message and "domainType: qemu" in status.message
    # The same host configured for TCG is fine.
    provider, _host = make_host("qemu", max_vcpus=host.max_vcpus)
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (True, "Reachable")


def test_a_type_libvirt_does_not_know_is_domain_type_unsupported(make_host):
    provider, _host = make_host("kvm", max_vcpus={"qemu": 16})
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (False, "DomainTypeUnsupported")
    assert "unknown type 'kvm'" in status.message


def test_other_errors_of_the_type_question_are_not_a_verdict(make_host):
    provider, _host = make_host("kvm", max_vcpus={"kvm": err(b.ERR_RPC, "connection reset"), "qemu": 16})
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (False, "Unreachable")


# The host CPU of a machine whose /dev/kvm is kvm_pvm (seen on an Intel Xeon cloud VM: a kvm
# guest started as libvirt saw it, then printed nothing, or paused on an emulation failure).
PVM_FEATURES = ["vme", "ss", "hypervisor", "avx512f", "la57"]


def test_a_kvm_without_hardware_virtualisation_is_unsupported_and_creates_nothing(make_host):
    provider, host = make_host("kvm", cpu_features=PVM_FEATURES)
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (False, "DomainTypeUnsupported")
    assert "neither vmx nor svm" in status.message and "domainType: qemu" in status.message
    with pytest.raises(ProviderError) as caught:
        provider.create(request("a"), dl())
    assert caught.value.error_class == errors.TRANSIENT
    assert "kvm_pvm" in str(caught.value) and "domainType: qemu" in str(caught.value)
    assert host.domains == {} and not any(v.startswith("proxy-") for v in host.pools["default"]["volumes"])
    with pytest.raises(ProviderError):
        provider.create(request("b"), dl())
    assert [c[1] for c in host.calls].count("capabilities") == 2  # one per check, once per create run


@pytest.mark.parametrize("features", [["vme", "svm"], ["vmx"], []])
def test_hardware_virtualisation_or_no_feature_list_is_no_verdict(make_host, features):
    provider, _host = make_host("kvm", cpu_features=features)
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (True, "Reachable")
    provider.create(request("a"), dl())


def test_a_qemu_host_is_never_asked_about_hardware_virtualisation(make_host):
    provider, host = make_host("qemu", cpu_features=PVM_FEATURES)
    provider.create(request("a"), dl())
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (True, "Reachable")
    assert "capabilities" not in [c[1] for c in host.calls]


def test_guests_that_cannot_start_under_kvm_are_reported_with_the_fix(make_host):
    """Nested KVM whose capabilities look fine but whose guests die at start (seen on AMD EPYC:
    "failed to set MSR 0x10a"): the create is Transient with the fix in its message, and the
    check names the failing guest instead of answering Ready."""
    provider, host = make_host("kvm", start_error=err(b.ERR_INTERNAL_ERROR, MSR_FAILURE))
    with pytest.raises(ProviderError) as caught:
        provider.create(request("a"), dl())
    assert caught.value.error_class == errors.TRANSIENT
    assert "failed to set MSR" in str(caught.value) and "domainType: qemu" in str(caught.value)
    host.add_domain("not-ours", state=b.DOMAIN_SHUTOFF)
    host.domains["not-ours"]["reason"] = 6  # failed, but carries no marks of ours
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (False, "GuestsFailing")
    assert status.details["failingGuests"] == [request("a").name]
    assert "nested KVM" in status.message and "domainType: qemu" in status.message


def test_a_qemu_host_does_not_get_the_kvm_hint(make_host):
    provider, _host = make_host("qemu", start_error=err(b.ERR_INTERNAL_ERROR, "qemu: cannot allocate memory"))
    with pytest.raises(ProviderError) as caught:
        provider.create(request("a"), dl())
    assert "domainType: qemu" not in str(caught.value)
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (False, "GuestsFailing")
    assert "nested KVM" not in status.message


@pytest.mark.parametrize(
    ("state", "reason", "failing"),
    [
        (b.DOMAIN_PAUSED, 10, True),  # crashed: a KVM emulation failure
        (b.DOMAIN_PAUSED, 0, True),  # unknown: qemu stopped the guest by itself
        (b.DOMAIN_PAUSED, 1, False),  # paused by a user
        (b.DOMAIN_CRASHED, 0, True),
        (b.DOMAIN_SHUTOFF, 6, True),  # failed to start
        (b.DOMAIN_SHUTOFF, 1, False),  # shut down by the guest
        (b.DOMAIN_RUNNING, 1, False),
    ],
)
def test_which_states_count_as_failing(make_host, state, reason, failing):
    provider, host = make_host("kvm")
    marks = {metadata.namespace("kvm2"): "<marks/>"}
    host.add_domain("proxy-a", state=state, metadata=marks)
    host.domains["proxy-a"]["reason"] = reason
    (status,) = provider.check(dl())
    assert (status.reason == "GuestsFailing") is failing
