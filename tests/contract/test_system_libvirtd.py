"""The suite's test hypervisor beside the machine's own libvirtd (a real hypervisor, a
developer's machine): each keeps its own daemons, domains and pid files, neither sees the
other's guests, and stopping the test hypervisor leaves the machine's daemon serving. Before
the private mount namespace (libvirt_namespace.sh), a second libvirtd could not start here:
"libvirtd did not come up within 30s"."""

from __future__ import annotations

import contextlib
import uuid

import libvirt
import pytest

from contract import system_libvirtd as system_libvirtd_fixtures
from contract.libvirt_host import LibvirtHost, unmarked_domain_xml

pytestmark = [pytest.mark.libvirt]

system_libvirtd = system_libvirtd_fixtures.system_libvirtd


def test_test_hypervisor_coexists_with_the_machines_own_libvirtd(system_libvirtd):
    own = system_libvirtd.connect()
    theirs_name = "egress-system-" + uuid.uuid4().hex[:8]
    own.defineXML(unmarked_domain_xml(theirs_name, "qemu"))
    host = LibvirtHost()
    try:
        host.start()
        ours_name = "egress-private-" + uuid.uuid4().hex[:8]
        dom = host.direct().createXML(unmarked_domain_xml(ours_name, host.domain_type), 0)
        assert dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
        private_names = {d.name() for d in host.direct().listAllDomains(0)}
        system_names = {d.name() for d in own.listAllDomains(0)}
        assert ours_name in private_names and ours_name not in system_names
        assert theirs_name in system_names and theirs_name not in private_names
        assert host.domain_log(ours_name), "the private virtlogd wrote the domain's log"
    finally:
        host.stop()
        with contextlib.suppress(libvirt.libvirtError):
            own.lookupByName(theirs_name).undefine()
    assert system_libvirtd.alive(), "stopping the test hypervisor must leave the machine's libvirtd serving"
    assert theirs_name not in {d.name() for d in own.listAllDomains(0)}
    own.close()


def test_two_test_hypervisors_in_one_process_share_the_lock_and_never_collide():
    """One process may run two hypervisors (the contract fixtures and the molecule surroundings
    in one session): the second start takes the process's lock again instead of waiting for
    it for ever, and each has its own daemons."""
    first, second = LibvirtHost(), LibvirtHost()
    try:
        first.start()
        second.start()
        assert first.socket != second.socket
        assert first.direct().getHostname() and second.direct().getHostname()
    finally:
        second.stop()
        first.stop()


def test_a_failed_start_releases_the_lock(monkeypatch):
    """A start that fails (here: libvirtd's config is unreadable) stops what it started and
    releases the process's hold on the machine lock, so the next start does not hang."""
    from contract import machine_lock

    held_before = machine_lock.held()
    broken = LibvirtHost()

    def refuse() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(broken, "_start_libvirtd", refuse)
    with pytest.raises(RuntimeError, match="boom"):
        broken.start()
    assert machine_lock.held() is held_before
    host = LibvirtHost()
    try:
        host.start()
    finally:
        host.stop()
