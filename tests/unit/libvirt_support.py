"""Shared setup of the libvirt provider's unit tests: a provider over the in-memory fake,
with a real loopback HTTP server for base images."""

from __future__ import annotations

import hashlib

from fakes.libvirt_fake import FakeDialer, FakeHost

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.guard import Budgets
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.provider import (
    LibvirtProvider,
)

IMAGE = b"QFI\xfb" + bytes(range(256)) * 40  # 10 KiB "qcow2"
IMAGE_SHA = hashlib.sha256(IMAGE).hexdigest()
BASE = "egress-base-" + IMAGE_SHA[:32]  # the base volume of IMAGE: named by content


def block(server, hosts=("h1",), **overrides) -> dict:
    data = {
        "sshKeyFile": "/nonexistent/key",
        "knownHostsFile": "/nonexistent/known_hosts",
        "images": {"tiny": {"url": server.url("/tiny.qcow2"), "sha256": IMAGE_SHA}},
        "machineTypes": {"small": {"vcpus": 1, "memoryMiB": 256}},
        "hosts": [{"name": h, "address": "127.0.0.1:2222", "pool": "default"} for h in hosts],
    }
    data.update(overrides)
    return data


def parse(type_name: str, data: dict):
    parsed = config.parse({"providers": [{"name": "hv-" + type_name, "type": type_name, type_name: data}]})
    return parsed.providers[0].block


def make(
    server, type_name="kvm2", hosts=("h1",), installation="inst-a", fake_hosts=None, budgets=None, **overrides
):
    server.files.setdefault("/tiny.qcow2", IMAGE)
    fakes = fake_hosts or [FakeHost(h) for h in hosts]
    dialer = FakeDialer(*fakes)
    provider = LibvirtProvider(
        type_name,
        "hv-" + type_name,
        installation,
        parse(type_name, block(server, hosts, **overrides)),
        dialer=dialer,
        budgets=budgets or Budgets(dial=2.0, call=2.0, transfer=2.0, http=5.0),
    )
    return provider, dialer, {h.name: h for h in fakes}


def request(uid="uid-1", zone="h1", machine="small", image="tiny", cloud_init="#cloud-config\n{}\n"):
    return contract.CreateRequest(
        name=names.name_from_uid(uid),
        uid=uid,
        placement=contract.Placement(zone=zone, machine_type=machine, image=image),
        cloud_init=cloud_init,
    )
