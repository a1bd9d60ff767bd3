"""The contract-suite harness (``harness.Backend``) for the ``kvm2`` provider over the in-memory
libvirt fake (``fakes/libvirt_fake.py``), with a real loopback HTTP server for the image.

The same suite runs against the real libvirtd in ``test_libvirt.py``; this run is fast and
reaches cases the real host cannot stage (a state outside libvirt's table)."""

from __future__ import annotations

import contextlib
import hashlib
import random

import pytest
from fakes.image_server import ImageServer
from fakes.libvirt_fake import FakeDialer, FakeHost, err

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import (
    CreateRequest,
    Placement,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import backend as b
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import ids, metadata
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.guard import Budgets
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.provider import (
    LibvirtProvider,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe

IMAGE = b"QFI\xfb fake base image " * 512
PROVIDER_NAME = "contract-fake-libvirt"


class FakeLibvirtContractBackend:
    reaches_running = True  # the fake guest reports an address through its "agent"
    timeout = 10.0

    def __init__(self, server):
        self.server = server
        server.files["/base.qcow2"] = IMAGE
        self.fake = FakeHost("hv1")
        self.installation = "ct-%08x" % random.SystemRandom().getrandbits(32)
        self.telemetry = observe.Telemetry()
        self._addresses = 0
        self.provider = self.build()
        self.malformed_ids = [
            "",
            None,
            "hosts/hv1/domains",
            "hosts/hv1/domains/proxy-a/x",
            "hosts/HV1/domains/proxy-a",
            "hosts/hv1/domains/Proxy",
            "zones/hv1/instances/proxy-a",
        ]

    def build(self, installation=None, telemetry=None, image_url=None):
        """The provider; ``image_url``: another URL for the base image (one with credentials)."""
        block = {
            "sshKeyFile": "/unused/key",
            "knownHostsFile": "/unused/known_hosts",
            "images": {
                "base": {
                    "url": image_url or self.server.url("/base.qcow2"),
                    "sha256": hashlib.sha256(IMAGE).hexdigest(),
                }
            },
            "machineTypes": {"tiny": {"vcpus": 1, "memoryMiB": 128}},
            "hosts": [{"name": "hv1", "address": "127.0.0.1"}],
        }
        parsed = config.parse({"providers": [{"name": PROVIDER_NAME, "type": "kvm2", "kvm2": block}]})
        inner = LibvirtProvider(
            "kvm2",
            PROVIDER_NAME,
            installation or self.installation,
            parsed.providers[0].block,
            dialer=_AddressingDialer(self),
            budgets=Budgets(dial=2, call=2, transfer=2, http=5),
        )
        return observe.observed(inner, self.telemetry if telemetry is None else telemetry)

    def another_provider(self, installation=None):
        return self.build(installation=installation, telemetry=observe.Telemetry())

    @contextlib.contextmanager
    def unproven_backend(self, body: str):
        """No HTTP API: the host answers every dial with an unexpected protocol reply (what an
        HTTP server in front of port 22 gives), so nothing about any domain is known."""
        provider = self.build(telemetry=observe.Telemetry())
        provider.inner.dialer.fail["hv1"] = err(
            b.ERR_RPC, "unexpected reply: HTTP/1.1 404 Not Found (%s)" % body
        )
        yield provider

    def request(self, uid: str, cloud_init: str = "") -> CreateRequest:
        return CreateRequest(
            name=names.name_from_uid(uid),
            uid=uid,
            placement=Placement(zone="hv1", machine_type="tiny", image="base"),
            cloud_init=cloud_init,
        )

    def give_address(self, name: str) -> None:
        """A started fake guest gets an address from its guest agent."""
        self._addresses += 1
        dom = self.fake.domains.get(name)
        if dom is not None and not dom["addresses"]:
            dom["addresses"] = {"agent": [("ipv4", "10.77.0.%d" % (self._addresses % 250 + 1))]}

    def create_unmarked(self, name: str) -> None:
        self.fake.add_domain(name)

    def force_unknown_state(self, provider_id: str) -> None:
        _host, name = ids.parse_id(provider_id)
        self.fake.domains[name]["state"] = 99

    def backend_record(self, provider_id: str) -> dict:
        _host, name = ids.parse_id(provider_id)
        marks = metadata.parse_element(self.fake.domains[name]["metadata"][metadata.namespace("kvm2")])
        return {"uid": marks.uid, "created_at": marks.created_at}

    @contextlib.contextmanager
    def break_listing(self):
        self.fake.fail["domain_names"] = err(b.ERR_RPC, "connection reset by peer")
        try:
            yield
        finally:
            self.fake.fail.pop("domain_names", None)

    def leftovers(self, provider_id: str) -> list:
        _host, name = ids.parse_id(provider_id)
        found = ["domain %s" % name] if name in self.fake.domains else []
        return found + ["volume %s" % v for v in self.fake.volumes() if v.startswith(name + ".")]

    def captured_output(self) -> str:
        return ""

    def teardown(self) -> None:
        self.server.files.pop("/base.qcow2", None)


class _AddressingDialer(FakeDialer):
    """Dials the harness's fake host; a started domain gets an address (like a booted guest)."""

    def __init__(self, harness):
        super().__init__(harness.fake)
        self.harness = harness

    def dial(self, host):
        conn = super().dial(host)
        original = conn.domain_start

        def start(name):
            original(name)
            self.harness.give_address(name)

        conn.domain_start = start
        return conn


@pytest.fixture(name="backend")
def fake_libvirt_backend():
    """A harness over a fresh fake host, with its own image server; both closed at teardown."""
    server = ImageServer()
    harness = FakeLibvirtContractBackend(server)
    try:
        yield harness
    finally:
        harness.teardown()
        server.close()
