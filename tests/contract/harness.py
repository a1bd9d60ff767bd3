"""What a provider's test file hands the conformance suite: a ``Backend`` harness.

Each provider's ``tests/contract/test_<type>.py`` subclasses ``suite.ContractSuite`` and
defines a ``backend`` fixture returning an object with this shape. The suite only talks to the
provider through the contract; the harness is how it reaches *behind* the provider to set up
situations (an unmarked instance, an unknown backend state, a listing that cannot be trusted)
and to read what really landed on the backend.

Importing: ``tests/contract`` is a package (empty ``__init__.py``; pytest puts ``tests/`` on
``sys.path``), so a provider's test file starts with
``from contract.suite import ContractSuite``.

The harness also owns cleanup behind the provider's back: at teardown it removes whatever the
test left (instances, processes, files) by their own ids, never by name patterns.
"""

from __future__ import annotations

import contextlib
from typing import Protocol

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import (
    CreateRequest,
    Provider,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.observe import Telemetry


class Backend(Protocol):
    #: the provider under test, built with ``registry.build`` (so it is observed like in production);
    #: its configured name must differ from its type name, so the suite can tell which one an
    #: error carries
    provider: Provider
    #: the ``Telemetry`` the provider was built with (the suite checks its records)
    telemetry: Telemetry
    #: provider ids the provider can never resolve (wrong shape, bad separators, unknown location)
    malformed_ids: list
    #: whether instances of this backend reach Running in this test environment
    reaches_running: bool
    #: seconds the suite waits for Running (or for NotFound after delete)
    timeout: float

    def request(self, uid: str, cloud_init: str = "") -> CreateRequest:
        """A request this backend can satisfy, named ``name_from_uid(uid)``."""

    def create_unmarked(self, name: str) -> None:
        """Create an instance named ``name`` without the managed mark and without a UID, behind
        the provider's back (as another tool or installation would): ``list_by_tag`` must leave
        it out and ``create`` of that name must not adopt it. The harness removes it at teardown."""

    def force_unknown_state(self, provider_id: str) -> None:
        """Put the instance into a backend state the provider does not recognise (or, where the
        backend has no such state, the nearest state that will not recover by itself)."""

    def backend_record(self, provider_id: str) -> dict:
        """``{"uid": ..., "created_at": datetime|None}`` read straight from the backend."""

    def break_listing(self) -> contextlib.AbstractContextManager:
        """While active, the provider cannot vouch for a complete list (its list must fail)."""

    def another_provider(self, installation: str | None = None) -> Provider:
        """A second, freshly built provider for the same config (same backend), with the given
        installation id (default: the same). It shares no memory with ``provider``: the suite uses
        it to prove ids are self-contained, values are read back from the backend, and that an
        installation never lists another's instances."""

    def leftovers(self, provider_id: str) -> list:
        """Human-readable descriptions of what ``create`` made for ``provider_id`` that still
        exists on the backend (instance, processes, disks, files...); empty once fully deleted."""

    def unproven_backend(self, body: str) -> contextlib.AbstractContextManager:
        """While active, yields a provider of this type whose backend answers every request with
        "not found" and no proof that the instance asked for is gone: for an HTTP API, a 404 with
        the body ``fakes.not_found_server.BODIES[body]`` (a wrong server URL, an ingress in front
        of the API); for a backend without one, its nearest equivalent (``local``: a state
        directory that is not a directory). get, delete and list must never answer NotFound,
        and delete must never report success."""

    def captured_output(self) -> str:
        """Everything the backend side logged or stored as text during the test (for the
        cloud-init sentinel check); may be empty when the backend keeps no logs."""
