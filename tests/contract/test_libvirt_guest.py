"""The conformance suite against real guests: the ``kvm2`` provider boots the test image
(tests/guest) on the real libvirtd over the real sshd, each guest takes a DHCP lease in the
test's network namespace and reports it through its agent, so every rule that waits for
Running runs here with a real address (tests/contract/test_libvirt.py runs the same rules on
an image that boots nothing)."""

from __future__ import annotations

import pytest
from guest import fixtures

from contract import libvirt_fixtures
from contract.suite import ContractSuite

pytestmark = pytest.mark.libvirt

libvirt_host = libvirt_fixtures.libvirt_host
image_host = libvirt_fixtures.image_host
guest_image = fixtures.guest_image
guest_network = fixtures.guest_network
guest_backend = fixtures.guest_backend


@pytest.fixture
def backend(guest_backend):
    return guest_backend


class TestLibvirtGuestContract(ContractSuite):
    """Every contract rule, against real booted guests."""
