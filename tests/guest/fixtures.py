"""Session fixtures for the real-guest tests: import ``guest_image``, ``guest_network`` and
``guest_backend`` into a test module (with ``libvirt_host`` and ``image_host`` from
``contract.libvirt_fixtures``, which they build on).

- ``guest_image``: the image of ``build_image.py`` (built once per machine, then cached).
- ``guest_network``: the test's bridge and network namespace (``network.py``), one per process
  (shared with the molecule surroundings when they run in the same process).
- ``guest_backend``: a contract harness whose provider boots real guests on that bridge.
"""

from __future__ import annotations

import dataclasses
import json
import os
import xml.etree.ElementTree as ET

import libvirt
import pytest
from contract.libvirt_backend import LibvirtContractBackend
from contract.libvirt_fixtures import announce

from guest import build_image
from guest import network as guest_network_module
from guest.network import GuestNetwork

GUEST_IMAGE_PATH = "/guest.qcow2"
PROXY_PORT = 3128


@dataclasses.dataclass
class GuestImage:
    directory: str
    sha256: str
    facts: dict

    @property
    def path(self) -> str:
        return os.path.join(self.directory, "guest.qcow2")

    @property
    def busybox(self) -> str:
        return os.path.join(self.directory, "busybox")

    def data(self) -> bytes:
        with open(self.path, "rb") as handle:
            return handle.read()


def load_image() -> GuestImage:
    """The image of the current key, built first when this machine has none."""
    directory = build_image.ensure()
    with open(os.path.join(directory, "image.json"), encoding="utf-8") as handle:
        facts = json.load(handle)
    return GuestImage(directory, facts["sha256"], facts)


@pytest.fixture(scope="session")
def guest_image() -> GuestImage:
    return load_image()


@pytest.fixture(scope="session")
def guest_network(libvirt_host, guest_image, request) -> GuestNetwork:
    """One network per test process, however many modules import this fixture (each import is
    its own session fixture to pytest). It depends on the hypervisor fixture for its
    machine-wide lock: the network's fixed subnet and its clean-up of a crashed session's
    leftovers are safe only under that lock."""
    network = guest_network_module.acquire_shared(guest_image.busybox)
    request.addfinalizer(guest_network_module.release_shared)
    return network


def user_data(
    address: str = "dhcp", gateway: str = "", agent: bool = True, agent_seconds: int = 0, extra: str = ""
) -> str:
    """A #cloud-config the test guest's NoCloud consumer (tests/guest/init.sh) acts on."""
    lines = ["#cloud-config", "egress_guest_address: %s" % address]
    if gateway:
        lines.append("egress_guest_gateway: %s" % gateway)
    lines.append("egress_guest_proxy_port: %d" % PROXY_PORT)
    lines.append("egress_guest_agent: %s" % ("true" if agent else "false"))
    if agent_seconds:
        lines.append("egress_guest_agent_seconds: %d" % agent_seconds)
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


class GuestBackend(LibvirtContractBackend):
    """The kvm2 harness with a bootable image: guests get an address (DHCP from the test
    namespace unless the user-data sets one), report it through the guest agent, and reach
    Running. The domain type is the guest-level probe's (hypervisor_probe.py): KVM only where
    a KVM guest really booted this image, TCG otherwise."""

    reaches_running = True
    timeout = 180.0  # TCG boots in ~5 s alone, slower with several guests on two cores

    def __init__(self, host, images, image: GuestImage, network: GuestNetwork, type_name: str = "kvm2"):
        self.image = image
        self.network = network
        self.domain_type = host.domain_type_for_guests(image.path).domain_type
        if GUEST_IMAGE_PATH not in images.server.files:  # one read of the image per process
            images.server.files[GUEST_IMAGE_PATH] = image.data()
        super().__init__(host, images, type_name=type_name)

    def block(self, **overrides) -> dict:
        data = super().block()
        data["images"] = dict(
            data["images"],
            guest={"url": self.images.server.url(GUEST_IMAGE_PATH), "sha256": self.image.sha256},
        )
        data["machineTypes"] = dict(data["machineTypes"], small={"vcpus": 1, "memoryMiB": 256})
        data["hosts"] = [dict(data["hosts"][0], bridge=self.network.bridge, domainType=self.domain_type)]
        data.update(overrides)
        return data

    def guest_mac(self, name: str) -> str:
        """The MAC libvirt gave the domain's NIC (read behind the provider's back)."""
        xml = self.host.direct().lookupByName(name).XMLDesc(0)
        return ET.fromstring(xml).find("devices/interface/mac").get("address")

    def arp_addresses(self, name: str):
        """What libvirt's ARP source says of the domain: its IPv4 addresses, or the error text."""
        dom = self.host.direct().lookupByName(name)
        try:
            found = dom.interfaceAddresses(libvirt.VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_ARP, 0) or {}
        except libvirt.libvirtError as exc:
            return str(exc)
        return [a["addr"] for iface in found.values() for a in iface.get("addrs") or []]

    def request(self, uid: str, cloud_init: str = "", image: str = "guest"):
        req = super().request(uid, cloud_init=cloud_init, image=image)
        return dataclasses.replace(req, placement=dataclasses.replace(req.placement, machine_type="small"))


@pytest.fixture
def guest_backend(libvirt_host, image_host, guest_image, guest_network, request):
    harness = GuestBackend(libvirt_host, image_host, guest_image, guest_network)
    announce(request.config, libvirt_host.domain_type_for_guests(guest_image.path).line)
    try:
        yield harness
    finally:
        harness.teardown()
