"""Pytest fixtures shared by the local provider's tests against real Squid: a throwaway
provider (``backend``, torn down by its own ids and pids) and a loopback origin (``origin``).
Import them into a test module by name."""

from __future__ import annotations

import pytest
from proxy_traffic import origin_server

from contract.local_backend import LocalBackend


@pytest.fixture
def backend(tmp_path):
    harness = LocalBackend(tmp_path)
    try:
        yield harness
    finally:
        harness.teardown()


@pytest.fixture
def origin():
    with origin_server() as address:
        yield address
