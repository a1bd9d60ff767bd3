"""The contract-suite harness (``harness.Backend``) for the ``gcp`` provider.

The provider runs unchanged, with the real google-cloud-compute client (REST transport), against
the local fake of the Compute Engine API (tests/fakes/gcp) through ``apiEndpoint`` and anonymous
credentials. Each harness owns its own fake server (a free port on 127.0.0.1) and a random
installation, so tests never share state. Behind the provider's back it works on the fake's
state directly: an unmarked instance, an unknown status, a list that fails as a whole.
"""

from __future__ import annotations

import contextlib
import datetime
import random

import pytest
from fakes.gcp import FakeCompute
from fakes.gcp.model import Timing
from fakes.not_found_server import BODIES, NotFoundServer

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import (
    CreateRequest,
    Placement,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import labels
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.instance import parse_id
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe

PROVIDER_NAME = "contract-gcp"  # deliberately not the type name
PROJECT = "fake-project"
ZONE = "us-central1-a"
IMAGE = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64"
UNKNOWN_STATUS = "HIBERNATING_SOMEDAY"
FAST = Timing(provisioning=0.2, staging=0.2, operation=0.3, deletion=0.3)


class GcpBackend:
    reaches_running = True
    timeout = 15.0

    def __init__(self, timing: Timing = FAST, **block):
        self.fake = FakeCompute(PROJECT, timing=timing).start()
        self.installation = "ct-%08x" % random.SystemRandom().getrandbits(32)
        self.block = block
        self.expected_problems = []  # departures from the response schemas a test makes on purpose
        self.telemetry = observe.Telemetry()
        self.provider = self.build()
        self._built = [self.provider]
        self.malformed_ids = [
            "",
            None,
            "proxy-abcdefghijklmnop",
            "zones/%s/instances/" % ZONE,
            "zones//instances/proxy-x",
            "zones/%s/instances/Proxy-X" % ZONE,
            "zones/%s/instances/proxy-x/extra" % ZONE,
            "projects/%s/zones/%s/instances/proxy-x" % (PROJECT, ZONE),
            "zones/%s/disks/proxy-x" % ZONE,
            "zones/../instances/proxy-x",
            "zones/%s/instances/proxy-x\n" % ZONE,
            " zones/%s/instances/proxy-x" % ZONE,
            "zones/%s/instances/%s" % (ZONE, "a" * 64),
            "local/proxy-x",
        ]

    # -- construction --------------------------------------------------------------------

    def build(self, installation: str | None = None, telemetry=None, name: str = PROVIDER_NAME, **overrides):
        block = {"project": PROJECT, "apiEndpoint": self.fake.endpoint}
        block.update(self.block)
        block.update(overrides)
        parsed = providers_file.parse(
            {
                "installation": installation or self.installation,
                "providers": [{"name": name, "type": "gcp", "gcp": block}],
            }
        )
        provider = registry.build(
            parsed.providers[0], parsed.installation, self.telemetry if telemetry is None else telemetry
        )
        if hasattr(self, "_built"):
            self._built.append(provider)
        return provider

    def another_provider(self, installation: str | None = None):
        return self.build(installation=installation, telemetry=observe.Telemetry())

    @contextlib.contextmanager
    def unproven_backend(self, body: str):
        server = NotFoundServer(*BODIES[body])
        try:
            yield self.build(telemetry=observe.Telemetry(), apiEndpoint=server.endpoint)
        finally:
            server.close()

    def request(self, uid: str, cloud_init: str = "", zone: str = ZONE, **placement) -> CreateRequest:
        fields = {"region": "us-central1", "zone": zone, "machine_type": "e2-small", "image": IMAGE}
        fields.update(placement)
        return CreateRequest(
            name=names.name_from_uid(uid),
            uid=uid,
            namespace="contract",
            proxy_name="proxy-under-test",
            placement=Placement(**fields),
            cloud_init=cloud_init,
            port=3128,
        )

    # -- behind the provider's back ------------------------------------------------------

    def create_unmarked(self, name: str) -> None:
        self.fake.state.put_unmarked(ZONE, name)

    def force_unknown_state(self, provider_id: str) -> None:
        zone, name = parse_id(provider_id)
        self.fake.state.force_status(zone, name, UNKNOWN_STATUS)  # a status the API may add
        self.expected_problems.append(UNKNOWN_STATUS)  # outside the document's enum on purpose

    def backend_record(self, provider_id: str) -> dict:
        zone, name = parse_id(provider_id)
        item = self.fake.state.get_instance(zone, name)
        created = datetime.datetime.fromisoformat(item["creationTimestamp"])
        return {"uid": labels.uid_of(item), "created_at": created, "labels": item.get("labels") or {}}

    @contextlib.contextmanager
    def break_listing(self):
        """The aggregated list fails as a whole (503), which partial success cannot paper over."""
        fault = self.fake.inject(503, method="GET", path=r"^aggregated/instances$", times=-1)
        try:
            yield
        finally:
            fault.times = 0

    def leftovers(self, provider_id: str) -> list:
        zone, name = parse_id(provider_id)
        return self.fake.state.leftovers(zone, name)

    def captured_output(self) -> str:
        """What the API side logged: every request line with its query, and every error it sent.

        Request bodies are left out on purpose: the insert body carries cloud-init as user-data
        metadata, which is exactly how it must reach the VM."""
        return "\n".join("%s %s %s" % (r.method, r.path, sorted(r.query.items())) for r in self.fake.log())

    def teardown(self) -> None:
        for provider in self._built:
            provider.close()
        self.fake.stop()
        # Every answer the fake gave fits Google's discovery document (tests/fakes/gcp/discovery.py).
        unexpected = [
            p for p in self.fake.response_problems if not any(e in p for e in self.expected_problems)
        ]
        assert unexpected == [], unexpected


@pytest.fixture(name="backend")
def gcp_backend():
    """A harness with its own fake API server, stopped at teardown."""
    harness = GcpBackend()
    try:
        yield harness
    finally:
        harness.teardown()
