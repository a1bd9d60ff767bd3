# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Pure builders of the XML documents libvirt is given: the domain and the volumes.

Everything is built with ElementTree, so a value can never break out of its attribute. The
domain carries the marks element in the type's own namespace (metadata.py), a virtio disk on
the overlay, the seed as a read-only CD-ROM on virtio-scsi, a virtio NIC on the host's bridge
(when one is configured), a serial console and the guest-agent channel Get reads addresses
through.

Why virtio-scsi for the seed: cloud kernels such as Debian's ``linux-image-cloud-amd64`` (the
kernel of Debian's genericcloud images) have no AHCI driver, so a SATA CD-ROM is invisible to
their cloud-init; virtio-scsi works with them, with generic kernels, and on i440fx and q35.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import metadata

GIB = 1024**3
MIB = 1024**2


def _sub(parent, tag, text=None, **attrs):
    node = ET.SubElement(parent, tag, {k.rstrip("_"): str(v) for k, v in attrs.items()})
    if text is not None:
        node.text = str(text)
    return node


def domain_xml(
    *,
    type_name: str,
    name: str,
    domain_type: str,
    vcpus: int,
    memory_mib: int,
    firmware: str,
    overlay_path: str,
    seed_path: str,
    bridge: str,
    uid: str,
    created_at,
    installation: str,
    passwd: str = "",
    provider: str = "",
    port: int = 0,
) -> str:
    dom = ET.Element("domain", {"type": domain_type})
    _sub(dom, "name", name)
    _sub(dom, "memory", memory_mib, unit="MiB")
    _sub(dom, "currentMemory", memory_mib, unit="MiB")
    _sub(dom, "vcpu", vcpus, placement="static")
    meta = _sub(dom, "metadata")
    ns = metadata.namespace(type_name)
    ET.register_namespace(metadata.PREFIX, ns)
    _sub(
        meta,
        "{%s}%s" % (ns, metadata.ELEMENT),
        **metadata.attributes(uid, created_at, installation, passwd, provider, port),
    )
    os_node = _sub(dom, "os", firmware="efi") if firmware == "uefi" else _sub(dom, "os")
    _sub(os_node, "type", "hvm", arch="x86_64")
    _sub(os_node, "boot", dev="hd")
    features = _sub(dom, "features")
    _sub(features, "acpi")
    _sub(features, "apic")
    if domain_type == "kvm":
        _sub(dom, "cpu", mode="host-passthrough")
    _sub(dom, "on_poweroff", "destroy")
    _sub(dom, "on_reboot", "restart")
    _sub(dom, "on_crash", "destroy")
    devices = _sub(dom, "devices")
    disk = _sub(devices, "disk", type="file", device="disk")
    _sub(disk, "driver", name="qemu", type="qcow2")
    _sub(disk, "source", file=overlay_path)
    _sub(disk, "target", dev="vda", bus="virtio")
    _sub(devices, "controller", type="scsi", index="0", model="virtio-scsi")
    cdrom = _sub(devices, "disk", type="file", device="cdrom")
    _sub(cdrom, "driver", name="qemu", type="raw")
    _sub(cdrom, "source", file=seed_path)
    _sub(cdrom, "target", dev="sda", bus="scsi")
    _sub(cdrom, "readonly")
    if bridge:
        nic = _sub(devices, "interface", type="bridge")
        _sub(nic, "source", bridge=bridge)
        _sub(nic, "model", type="virtio")
    serial = _sub(devices, "serial", type="pty")
    _sub(serial, "target", port="0")
    console = _sub(devices, "console", type="pty")
    _sub(console, "target", type="serial", port="0")
    channel = _sub(devices, "channel", type="unix")
    _sub(channel, "target", type="virtio", name="org.qemu.guest_agent.0")
    _sub(devices, "memballoon", model="virtio")
    return ET.tostring(dom, encoding="unicode")


def raw_volume_xml(name: str, size: int) -> str:
    """A raw volume of exactly ``size`` bytes, filled by an upload (image, seed, marks)."""
    vol = ET.Element("volume")
    _sub(vol, "name", name)
    _sub(vol, "capacity", size, unit="bytes")
    _sub(vol, "allocation", 0, unit="bytes")
    target = _sub(vol, "target")
    _sub(target, "format", type="raw")
    return ET.tostring(vol, encoding="unicode")


def overlay_volume_xml(name: str, size_gb: int, backing_path: str, backing_format: str) -> str:
    vol = ET.Element("volume")
    _sub(vol, "name", name)
    _sub(vol, "capacity", size_gb * GIB, unit="bytes")
    _sub(vol, "allocation", 0, unit="bytes")
    target = _sub(vol, "target")
    _sub(target, "format", type="qcow2")
    backing = _sub(vol, "backingStore")
    _sub(backing, "path", backing_path)
    _sub(backing, "format", type=backing_format)
    return ET.tostring(vol, encoding="unicode")
