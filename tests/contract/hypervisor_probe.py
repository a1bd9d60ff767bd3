"""Which domain type the test hypervisors use, decided by proof, not by presence.

``/dev/kvm`` existing says little: on a nested AMD host qemu dies at start-up with "failed to
set MSR 0x10a" under the provider's ``host-passthrough`` CPU, and on a nested Intel host guests
have stopped inside isolinux with a KVM emulation failure. So a throwaway guest is started the
way the tests start theirs (through the test libvirtd, with the provider's own domain XML, a
short bound) and KVM is chosen only when it really runs:

- level ``boot``: a boot sector that writes a marker to the serial port, on a qcow2 disk; what
  the contract and module tests need (their domains boot nothing but firmware).
- level ``guest``: the real-guest image (tests/guest) up to its init's first console line; what
  the real-guest tests, molecule and the guest benchmark need.

Everything else falls back to TCG (``qemu``), with the reason. The answer is cached per machine
(kernel, CPU, qemu, libvirt, this file and the image) for a day, so a session pays for the
probe once. ``EGRESS_TEST_DOMAIN_TYPE=qemu|kvm`` forces a choice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import grp
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

import libvirt

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import xmlbuild

CACHE_DIR = "/var/cache/egress-proxies/hypervisor"
CACHE_SECONDS = 24 * 3600
BOUND_SECONDS = {"boot": 20.0, "guest": 60.0}
MARKERS = {"boot": "egress-probe-ok", "guest": "egress-guest:"}
LEVEL_TEXT = {"boot": "domains that boot firmware only", "guest": "real guests"}
FORCE_VARIABLE = "EGRESS_TEST_DOMAIN_TYPE"


@dataclasses.dataclass(frozen=True)
class Choice:
    domain_type: str
    reason: str
    level: str

    @property
    def line(self) -> str:
        return "test hypervisor: domainType %s for %s (%s)" % (
            self.domain_type,
            LEVEL_TEXT[self.level],
            self.reason,
        )


_memo: dict = {}


def choose(connect, scratch: str, level: str = "boot", image: str | None = None) -> Choice:
    """The domain type for ``level``; ``connect()`` gives a connection to the test libvirtd
    (used only when neither the environment, the memo nor the cache answers)."""
    forced = os.environ.get(FORCE_VARIABLE, "")
    if forced in ("qemu", "kvm"):
        return Choice(forced, "forced by %s" % FORCE_VARIABLE, level)
    if forced:
        raise ValueError("%s must be qemu or kvm, not %r" % (FORCE_VARIABLE, forced))
    if not os.path.exists("/dev/kvm"):
        return Choice("qemu", "no /dev/kvm on this machine", level)
    problem = _kvm_device_usable()
    if problem:
        return Choice("qemu", problem, level)
    if (level, image) in _memo:  # the machine and the image do not change within a process
        return _memo[(level, image)]
    key = _cache_key(level, image)
    choice = _cached(key, level)
    if choice is None:
        choice = _probe(connect, scratch, level, image)
        _store(key, choice)
    _memo[(level, image)] = choice
    return choice


def _kvm_device_usable() -> str:
    """Make /dev/kvm usable by qemu the way Debian's udev rule does (root:kvm 0660), which a host
    without udev (a container, a microVM) lacks; the problem, or ``""``."""
    try:
        kvm_gid = grp.getgrnam("kvm").gr_gid
    except KeyError:
        return "no kvm group on this machine (qemu could not open /dev/kvm)"
    try:
        st = os.stat("/dev/kvm")
        if st.st_gid != kvm_gid or (st.st_mode & 0o060) != 0o060:
            os.chown("/dev/kvm", 0, kvm_gid)
            os.chmod("/dev/kvm", 0o660)
    except OSError as exc:
        return "/dev/kvm could not be given to the kvm group: %s" % exc
    return ""


# -- the probe ------------------------------------------------------------------------------


def _probe(connect, scratch: str, level: str, image: str | None) -> Choice:
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="probe-", dir=scratch)
    os.chmod(work, 0o755)  # qemu runs as libvirt-qemu
    try:
        disk = _probe_disk(work, level, image)
        ok, detail = _boot(connect(), work, disk, level)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    took = time.monotonic() - started
    if ok:
        return Choice("kvm", "a KVM guest %s in %.1f s" % (detail, took), level)
    return Choice("qemu", "KVM present but a guest did not start: %s" % detail, level)


def _probe_disk(work: str, level: str, image: str | None) -> str:
    disk = os.path.join(work, "probe.qcow2")
    if level == "guest":
        if not image:
            raise ValueError("the guest level needs the guest image")
        shutil.copyfile(image, disk)  # a copy: libvirt relabels what a guest uses, never the cache
    else:
        raw = os.path.join(work, "boot.img")
        with open(raw, "wb") as handle:
            handle.write(_boot_sector(MARKERS["boot"]))
        subprocess.run(["qemu-img", "convert", "-q", "-f", "raw", "-O", "qcow2", raw, disk], check=True)
    os.chmod(disk, 0o644)
    return disk


def _boot_sector(marker: str) -> bytes:
    """Real-mode code: write ``marker`` and a newline to COM1 (0x3f8), then halt for ever."""
    code = bytearray([0xFA, 0xBA, 0xF8, 0x03])  # cli; mov dx, 0x3f8
    for byte in (marker + "\n").encode():
        code += bytes([0xB0, byte, 0xEE])  # mov al, byte; out dx, al
    code += bytes([0xF4, 0xEB, 0xFD])  # hlt; jmp back to hlt
    return bytes(code) + bytes(510 - len(code)) + b"\x55\xaa"


def _domain_xml(work: str, disk: str, level: str, serial_log: str) -> str:
    """The provider's own domain XML for a kvm guest, with the serial port written to a file."""
    seed = os.path.join(work, "empty.iso")
    with open(seed, "wb"):
        pass
    os.chmod(seed, 0o644)
    text = xmlbuild.domain_xml(
        type_name="kvm",
        name="egress-probe-%s-%d" % (level, os.getpid()),
        domain_type="kvm",
        vcpus=1,
        memory_mib=256 if level == "guest" else 64,
        firmware="bios",
        overlay_path=disk,
        seed_path=seed,
        bridge="",
        uid="hypervisor-probe",
        created_at=datetime.datetime.now(datetime.UTC),
        installation="hypervisor-probe",
    )
    root = ET.fromstring(text)
    devices = root.find("devices")
    for tag in ("serial", "console"):
        for node in devices.findall(tag):
            devices.remove(node)
    serial = ET.SubElement(devices, "serial", {"type": "file"})
    ET.SubElement(serial, "source", {"path": serial_log})
    ET.SubElement(serial, "target", {"port": "0"})
    return ET.tostring(root, encoding="unicode")


def _boot(conn, work: str, disk: str, level: str) -> tuple:
    """``(True, what it did)`` when the guest printed its marker within the bound and kept
    running, else ``(False, why not)``."""
    serial_log = os.path.join(work, "serial.log")
    try:
        dom = conn.createXML(_domain_xml(work, disk, level, serial_log), 0)
    except libvirt.libvirtError as exc:
        return False, _short(str(exc))
    try:
        end = time.monotonic() + BOUND_SECONDS[level]
        while time.monotonic() < end:
            state, _reason = dom.state()
            if state != libvirt.VIR_DOMAIN_RUNNING:
                return False, "the guest went %s before printing its first line" % _state_name(state)
            if MARKERS[level] in _read(serial_log):
                what = "ran its boot sector" if level == "boot" else "booted the guest image to its init"
                return True, what
            time.sleep(0.2)
        return False, "no console output within %.0f s" % BOUND_SECONDS[level]
    finally:
        with contextlib.suppress(libvirt.libvirtError):
            dom.destroy()


def _state_name(state: int) -> str:
    return {
        libvirt.VIR_DOMAIN_PAUSED: "paused (an emulation failure)",
        libvirt.VIR_DOMAIN_SHUTOFF: "off",
        libvirt.VIR_DOMAIN_CRASHED: "crashed",
    }.get(state, "to state %d" % state)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _short(message: str) -> str:
    """libvirt's message without qemu's timestamps, first lines only."""
    lines = [re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z ", "", line) for line in message.splitlines()]
    return " / ".join(lines[:3])[:400]


# -- the cache --------------------------------------------------------------------------------


def _cache_key(level: str, image: str | None) -> str:
    facts = [level, platform.release(), _cpu_facts(), _command_output(["qemu-system-x86_64", "--version"])]
    facts.append(str(libvirt.getVersion()))
    with open(__file__, "rb") as handle:
        facts.append(hashlib.sha256(handle.read()).hexdigest())
    if image:
        stat = os.stat(image)
        facts.append("%s:%d:%d" % (image, stat.st_size, stat.st_mtime_ns))
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:16]


def _cpu_facts() -> str:
    wanted = ("vendor_id", "model name", "flags")
    found = {}
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            name, _sep, value = line.partition(":")
            if name.strip() in wanted and name.strip() not in found:
                found[name.strip()] = value.strip()
    return "|".join(found.get(name, "") for name in wanted)


def _command_output(argv: list) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _cached(key: str, level: str) -> Choice | None:
    path = os.path.join(CACHE_DIR, key + ".json")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        if time.time() - float(data["at"]) > CACHE_SECONDS or data["domain_type"] not in ("kvm", "qemu"):
            return None
        return Choice(data["domain_type"], "%s; probed %s, cached" % (data["reason"], data["when"]), level)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(key: str, choice: Choice) -> None:
    os.makedirs(CACHE_DIR, exist_ok=True)
    now = time.time()
    data = {
        "domain_type": choice.domain_type,
        "reason": choice.reason,
        "at": now,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(now)),
    }
    tmp = os.path.join(CACHE_DIR, "%s.%d.tmp" % (key, os.getpid()))
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, os.path.join(CACHE_DIR, key + ".json"))
