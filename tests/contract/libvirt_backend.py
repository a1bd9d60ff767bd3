"""The contract-suite harness (``harness.Backend``) for the ``kvm2`` provider against the real
libvirtd of ``libvirt_host.py``, reached over the real sshd.

It reaches behind the provider only through a local libvirt connection on libvirtd's unix
socket (never through the provider's SSH path). ``break_listing`` stops sshd, with every
session it forked, so the provider's pooled connection dies and no new one can be made; the
provider must then fail its list rather than return part of one. At teardown every instance
of its installation is deleted through the provider and every unmarked domain it made is
removed; leftovers fail the test.
"""

from __future__ import annotations

import contextlib
import random

import libvirt
from fakes.not_found_server import BODIES, NotFoundServer

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import (
    CreateRequest,
    Placement,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import ids, metadata
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe
from contract.libvirt_host import unmarked_domain_xml

PROVIDER_NAME = "contract-libvirt"  # deliberately not the type name
HOST_NAME = "hv1"


class LibvirtContractBackend:
    reaches_running = False  # the test image boots nothing, so no guest reports an address
    timeout = 60.0

    def __init__(self, host, images, type_name: str = "kvm2"):
        self.host = host
        self.images = images
        self.type_name = type_name
        self.installation = "ct-%08x" % random.SystemRandom().getrandbits(32)
        self.telemetry = observe.Telemetry()
        self._unmarked = []
        self._built = []
        self.provider = self.build()
        self.malformed_ids = [
            "",
            None,
            "proxy-abcdefghijklmnop",
            "hosts/hv1/domains",
            "hosts/hv1/domains/",
            "hosts//domains/proxy-a",
            "hosts/hv1/domains/proxy-a/extra",
            "hosts/hv1/instances/proxy-a",
            "zones/hv1/instances/proxy-a",
            "hosts/HV1/domains/proxy-a",
            "hosts/hv1/domains/Proxy-A",
            "hosts/hv1/domains/proxy-a\n",
            "local/proxy-a",
        ]

    # -- construction --------------------------------------------------------------------

    def block(self, **overrides) -> dict:
        data = {
            "sshKeyFile": self.host.key,
            "knownHostsFile": self.host.known_hosts,
            "diskSizeGb": 1,
            "images": {"base": {"url": self.images.url, "sha256": self.images.sha256}},
            "machineTypes": {"tiny": {"vcpus": 1, "memoryMiB": 128}},
            "hosts": [
                {
                    "name": HOST_NAME,
                    "address": "127.0.0.1:%d" % self.host.sshd_port,
                    "socket": self.host.socket,
                    "pool": self.host.pool,
                    "domainType": self.host.domain_type,
                }
            ],
        }
        data.update(overrides)
        return data

    def build(self, installation: str | None = None, telemetry=None, **overrides):
        parsed = providers_file.parse(
            {
                "installation": installation or self.installation,
                "providers": [
                    {"name": PROVIDER_NAME, "type": self.type_name, self.type_name: self.block(**overrides)}
                ],
            }
        )
        provider = registry.build(
            parsed.providers[0], parsed.installation, self.telemetry if telemetry is None else telemetry
        )
        self._built.append(provider)
        return provider

    def another_provider(self, installation: str | None = None):
        return self.build(installation=installation, telemetry=observe.Telemetry())

    @contextlib.contextmanager
    def unproven_backend(self, body: str):
        """The host's address pointed at a 404 HTTP server instead of its sshd: every dial
        meets an HTTP answer where the SSH banner should be."""
        server = NotFoundServer(*BODIES[body])
        host = dict(self.block()["hosts"][0], address=server.endpoint.split("//", 1)[1])
        try:
            yield self.build(telemetry=observe.Telemetry(), hosts=[host])
        finally:
            server.close()

    def request(self, uid: str, cloud_init: str = "", image: str = "base") -> CreateRequest:
        return CreateRequest(
            name=names.name_from_uid(uid),
            uid=uid,
            namespace="contract",
            proxy_name="proxy-under-test",
            placement=Placement(region="ignored", zone=HOST_NAME, machine_type="tiny", image=image),
            cloud_init=cloud_init,
            port=3128,
        )

    # -- behind the provider's back ------------------------------------------------------

    def _domain(self, provider_id: str):
        _host, name = ids.parse_id(provider_id)
        return self.host.direct().lookupByName(name)

    def create_unmarked(self, name: str) -> None:
        self.host.direct().defineXML(unmarked_domain_xml(name, self.host.domain_type, memory_mib=64))
        self._unmarked.append(name)

    def force_unknown_state(self, provider_id: str) -> None:
        """libvirt has no state outside the table; paused is the nearest that never recovers
        by itself (and Get must not resume it)."""
        self._domain(provider_id).suspend()

    def backend_record(self, provider_id: str) -> dict:
        text = self._domain(provider_id).metadata(
            libvirt.VIR_DOMAIN_METADATA_ELEMENT, metadata.namespace(self.type_name), 0
        )
        marks = metadata.parse_element(text)
        return {"uid": marks.uid, "created_at": marks.created_at}

    @contextlib.contextmanager
    def break_listing(self):
        self.host.stop_sshd()
        try:
            yield
        finally:
            self.host.start_sshd()

    def leftovers(self, provider_id: str) -> list:
        _host, name = ids.parse_id(provider_id)
        found = []
        try:
            self.host.direct().lookupByName(name)
            found.append("domain %s" % name)
        except libvirt.libvirtError:
            pass
        found += ["volume %s" % v for v in self.host.volumes() if v.startswith(name + ".")]
        return found

    def captured_output(self) -> str:
        return self.host.read_log()

    def teardown(self) -> None:
        problems = []
        try:
            for instance in self.provider.list_by_tag(Deadline(60)):
                try:
                    self.provider.delete(instance.id, Deadline(60))
                except Exception as exc:
                    problems.append("delete %s: %s" % (instance.id, exc))
        except Exception as exc:
            problems.append("list: %s" % exc)
        for name in self._unmarked:
            with contextlib.suppress(libvirt.libvirtError):
                dom = self.host.direct().lookupByName(name)
                with contextlib.suppress(libvirt.libvirtError):
                    dom.destroy()
                dom.undefine()
        for provider in self._built:
            provider.close()
        assert not problems, "teardown found leftovers: %s" % problems
