"""The test hypervisors' choice of domain type (tests/contract/hypervisor_probe.py) over a fake
libvirt connection: KVM only when the throwaway guest printed its marker and kept running, the
reason in every other case, the answer cached per machine and forced by the environment."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import libvirt
import pytest
from contract import hypervisor_probe


class FakeDomain:
    def __init__(self, states):
        self.states = list(states)
        self.destroyed = False

    def state(self):
        return [self.states.pop(0) if len(self.states) > 1 else self.states[0], 1]

    def destroy(self):
        self.destroyed = True


class FakeConnection:
    """``createXML`` writes ``output`` to the serial file the domain XML names, then behaves as
    ``states`` say; or raises ``error``."""

    def __init__(self, output="", states=(libvirt.VIR_DOMAIN_RUNNING,), error=None):
        self.output, self.states, self.error = output, states, error
        self.xml = None
        self.domain = None

    def createXML(self, xml, flags):  # noqa: N802 - libvirt's name
        self.xml = xml
        if self.error:
            raise libvirt.libvirtError(self.error)
        path = ET.fromstring(xml).find("devices/serial/source").get("path")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.output)
        self.domain = FakeDomain(self.states)
        return self.domain


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setattr(hypervisor_probe, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(hypervisor_probe, "BOUND_SECONDS", {"boot": 1.0, "guest": 1.0})
    monkeypatch.setattr(hypervisor_probe, "_memo", {})
    monkeypatch.setattr(hypervisor_probe, "_kvm_device_usable", lambda: "")
    monkeypatch.setattr(os.path, "exists", lambda p, _real=os.path.exists: p == "/dev/kvm" or _real(p))
    monkeypatch.delenv(hypervisor_probe.FORCE_VARIABLE, raising=False)


def choose(conn, tmp_path, level="boot"):
    image = None
    if level == "guest":
        image = str(tmp_path / "guest.qcow2")
        with open(image, "wb") as handle:
            handle.write(b"QFI\xfb")
    return hypervisor_probe.choose(lambda: conn, str(tmp_path), level=level, image=image)


def test_kvm_when_the_guest_prints_its_marker_and_runs(tmp_path):
    conn = FakeConnection(output="egress-probe-ok\n")
    choice = choose(conn, tmp_path)
    assert choice.domain_type == "kvm" and "ran its boot sector" in choice.reason
    root = ET.fromstring(conn.xml)
    assert root.get("type") == "kvm" and root.find("cpu").get("mode") == "host-passthrough"
    assert conn.domain.destroyed


def test_qemu_when_qemu_refuses_to_start_with_its_message(tmp_path):
    conn = FakeConnection(
        error="internal error: qemu unexpectedly closed the monitor: 2026-12-01T12:55:01.562820Z "
        "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69"
    )
    choice = choose(conn, tmp_path)
    assert choice.domain_type == "qemu"
    assert choice.reason.startswith("KVM present but a guest did not start")
    assert "failed to set MSR 0x10a" in choice.reason and "2026-12-01T" not in choice.reason
    assert "domainType qemu" in choice.line


def test_qemu_when_the_guest_pauses_on_an_emulation_failure(tmp_path):
    conn = FakeConnection(output="", states=(libvirt.VIR_DOMAIN_PAUSED,))
    choice = choose(conn, tmp_path, level="guest")
    assert choice.domain_type == "qemu" and "paused" in choice.reason
    assert conn.domain.destroyed


def test_qemu_when_the_guest_says_nothing_within_the_bound(tmp_path):
    choice = choose(FakeConnection(output="SeaBIOS\n"), tmp_path)
    assert choice.domain_type == "qemu" and "no console output within" in choice.reason


def test_the_answer_is_cached_per_machine(tmp_path, monkeypatch):
    first = choose(FakeConnection(output="egress-probe-ok\n"), tmp_path)
    monkeypatch.setattr(hypervisor_probe, "_memo", {})  # a new process
    again = hypervisor_probe.choose(lambda: pytest.fail("a cached answer must not probe"), str(tmp_path))
    assert again.domain_type == first.domain_type == "kvm" and "cached" in again.reason


def test_the_environment_forces_a_choice_and_rejects_nonsense(tmp_path, monkeypatch):
    monkeypatch.setenv(hypervisor_probe.FORCE_VARIABLE, "qemu")
    forced = hypervisor_probe.choose(lambda: pytest.fail("forced: no probe"), str(tmp_path))
    assert forced.domain_type == "qemu" and "forced" in forced.reason
    monkeypatch.setenv(hypervisor_probe.FORCE_VARIABLE, "xen")
    with pytest.raises(ValueError, match="qemu or kvm"):
        hypervisor_probe.choose(lambda: None, str(tmp_path))


def test_the_boot_sector_writes_the_marker_to_com1():
    sector = hypervisor_probe._boot_sector("egress-probe-ok")
    assert len(sector) == 512 and sector.endswith(b"\x55\xaa")
    assert sector[1:4] == bytes([0xBA, 0xF8, 0x03])  # mov dx, 0x3f8
    written = bytes(
        sector[i + 1] for i in range(4, len(sector) - 2) if sector[i] == 0xB0 and sector[i + 2] == 0xEE
    )
    assert written == b"egress-probe-ok\n"
