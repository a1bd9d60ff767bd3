"""The conformance suite for the ``kvm2`` provider over the in-memory libvirt fake (fast; the
real-libvirtd run is test_libvirt.py)."""

from __future__ import annotations

from contract.libvirt_fake_backend import fake_libvirt_backend
from contract.suite import ContractSuite

backend = fake_libvirt_backend  # the fixture, by the name the suite asks for


class TestLibvirtFakeContract(ContractSuite):
    """Every contract rule, over the fake behind the provider's seam."""
