"""The conformance suite for the ``gcp`` provider: the real google-cloud-compute client against
the local fake of the Compute Engine REST API (tests/fakes/gcp)."""

from __future__ import annotations

import pytest

from contract.gcp_backend import GcpBackend, gcp_backend
from contract.suite import ContractSuite

backend = gcp_backend  # the fixture, by the name the suite asks for


class TestGcpContract(ContractSuite):
    """Every contract rule, through the real SDK over HTTP."""


class TestGcpContractInternalWithFirewall(ContractSuite):
    """The same rules in internal-address mode with a managed firewall rule."""

    @pytest.fixture
    def backend(self):
        harness = GcpBackend(
            addressMode="internal", manageFirewall=True, firewallSourceRanges=["127.0.0.0/8"]
        )
        try:
            yield harness
        finally:
            harness.teardown()
