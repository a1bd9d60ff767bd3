"""The conformance suite for the ``kvm2`` provider over the in-memory libvirt fake (fast; the
real-libvirtd run is test_libvirt.py)."""

from __future__ import annotations

import pytest
from fakes.image_server import ImageServer

from contract.libvirt_fake_backend import FakeLibvirtContractBackend
from contract.suite import ContractSuite


@pytest.fixture
def backend():
    server = ImageServer()
    harness = FakeLibvirtContractBackend(server)
    try:
        yield harness
    finally:
        harness.teardown()
        server.close()


class TestLibvirtFakeContract(ContractSuite):
    """Every contract rule, over the fake behind the provider's seam."""
