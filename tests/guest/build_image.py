"""Builds the test guest image, once per machine: a bootable qcow2 made only from Debian's
packages, for the libvirt provider's real-guest tests (tests/integration/test_libvirt_guest.py).

What is inside: Debian's cloud kernel, a busybox-static initramfs whose /init is
``tests/guest/init.sh`` (a minimal NoCloud consumer), the QEMU guest agent and tinyproxy with
their shared libraries, and the virtio/SATA/iso9660 kernel modules. It is packed as an isolinux
ISO made hybrid with ``isohybrid`` (so BIOS boots it as a disk), then converted to compressed
qcow2.

Cache: ``$EGRESS_GUEST_CACHE`` (default /var/cache/egress-proxies/guest)/<key>/, where the key
hashes this directory's sources and the Debian versions used, so a new kernel or a changed init
builds a new image and an unchanged one is never rebuilt. The build runs under a lock
(concurrent callers wait, then reuse it) and is published by one rename. Progress goes to
stderr; the last line of stdout is the image directory (guest.qcow2, image.json with its
sha256, sizes and Debian versions, and the static busybox whose udhcpd the tests run).

When apt's lists are stale (a version they name is gone from the mirror, or a package has no
candidate), the lists are refreshed once with ``apt-get update`` and the build planned again.

Host tools: apt-get, dpkg-deb, readelf, cpio, gzip, xorriso, qemu-img (make bootstrap-test).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# What the image is made from (the cache key hashes these; the tests' other files do not count).
BUILD_SOURCES = ("build_image.py", "debian_packages.py", "kernel_modules.py", "init.sh")
if HERE not in sys.path:  # run as a script: import the sibling modules
    sys.path.insert(0, HERE)

import debian_packages  # noqa: E402
import kernel_modules  # noqa: E402

CACHE_ROOT = os.environ.get("EGRESS_GUEST_CACHE", "/var/cache/egress-proxies/guest")
KERNEL_META = "linux-image-cloud-amd64"
PAYLOAD = ("busybox-static", "qemu-guest-agent", "tinyproxy-bin")
BOOT = ("isolinux", "syslinux-common", "syslinux-utils")
BINARIES = ("usr/sbin/qemu-ga", "usr/bin/tinyproxy")
KERNEL_CMDLINE = "console=ttyS0 ipv6.disable=1 panic=10 quiet"

ISOLINUX_CFG = (
    """DEFAULT guest
PROMPT 0
TIMEOUT 0
LABEL guest
  KERNEL /boot/vmlinuz
  INITRD /boot/initrd.gz
  APPEND %s
"""
    % KERNEL_CMDLINE
)

UDHCPC_SCRIPT = """#!/bin/sh
# busybox udhcpc's hook: apply the lease to the interface.
case "$1" in
  deconfig) ip addr flush dev "$interface" ;;
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -n "$router" ] && ip route replace default via "${router%% *}"
    ;;
esac
exit 0
"""

PASSWD = "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"


def say(message: str) -> None:
    print("[guest-image %s] %s" % (time.strftime("%H:%M:%S"), message), file=sys.stderr, flush=True)


def sources_digest() -> str:
    digest = hashlib.sha256()
    for name in BUILD_SOURCES:
        with open(os.path.join(HERE, name), "rb") as handle:
            digest.update(name.encode() + b"\0" + handle.read())
    return digest.hexdigest()


def plan() -> dict:
    """Every package with the version apt would fetch, and the cache key they make."""
    kernel = debian_packages.depends([KERNEL_META])[KERNEL_META][0]
    libraries = debian_packages.library_closure(["qemu-guest-agent", "tinyproxy-bin"])
    names = list(dict.fromkeys([kernel, *PAYLOAD, *libraries, *BOOT]))
    versions = debian_packages.candidate_versions(names)
    key_text = json.dumps({"sources": sources_digest(), "versions": versions}, sort_keys=True)
    return {
        "kernel": kernel,
        "versions": versions,
        "key": hashlib.sha256(key_text.encode()).hexdigest()[:16],
    }


def run(*argv: str, cwd: str | None = None) -> None:
    subprocess.run(list(argv), cwd=cwd, check=True)


def write(path: str, text: str, mode: int = 0o644) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)


def build_initramfs(root: str, kernel_version: str, staging: str, out: str) -> list:
    shutil.copy2(os.path.join(root, "bin/busybox"), os.path.join(staging, "bin/busybox"))
    os.symlink("busybox", os.path.join(staging, "bin/sh"))  # the interpreter of /init
    shutil.copy2(os.path.join(HERE, "init.sh"), os.path.join(staging, "init"))
    os.chmod(os.path.join(staging, "init"), 0o755)
    libraries = debian_packages.copy_with_libraries(root, list(BINARIES), staging)
    modules = kernel_modules.load_order(os.path.join(root, "lib/modules", kernel_version))
    os.makedirs(os.path.join(staging, "lib/modules"))
    for path in modules:
        shutil.copy2(path, os.path.join(staging, "lib/modules", os.path.basename(path)))
    write(
        os.path.join(staging, "etc/modules.order"),
        "".join(os.path.basename(p) + "\n" for p in modules),
    )
    write(os.path.join(staging, "etc/udhcpc.script"), UDHCPC_SCRIPT, 0o755)
    write(os.path.join(staging, "etc/passwd"), PASSWD)
    write(os.path.join(staging, "etc/group"), GROUP)
    listing = subprocess.run(["find", ".", "-print0"], cwd=staging, capture_output=True, check=True).stdout
    archive = subprocess.run(
        ["cpio", "--null", "-o", "-H", "newc", "-R", "0:0", "--quiet"],
        cwd=staging,
        input=listing,
        capture_output=True,
        check=True,
    ).stdout
    with open(out, "wb") as handle:
        handle.write(subprocess.run(["gzip", "-9n"], input=archive, capture_output=True, check=True).stdout)
    return [os.path.basename(p) for p in modules] + libraries


def build_iso(root: str, kernel: str, initrd: str, iso_root: str, out: str) -> None:
    isolinux = os.path.join(iso_root, "isolinux")
    os.makedirs(isolinux)
    os.makedirs(os.path.join(iso_root, "boot"))
    shutil.copy2(os.path.join(root, "usr/lib/ISOLINUX/isolinux.bin"), isolinux)
    shutil.copy2(os.path.join(root, "usr/lib/syslinux/modules/bios/ldlinux.c32"), isolinux)
    write(os.path.join(isolinux, "isolinux.cfg"), ISOLINUX_CFG)
    shutil.copy2(os.path.join(root, "boot", "vmlinuz-" + kernel), os.path.join(iso_root, "boot/vmlinuz"))
    shutil.copy2(initrd, os.path.join(iso_root, "boot/initrd.gz"))
    run(
        "xorriso", "-as", "mkisofs", "-quiet", "-o", out, "-V", "EGRESSGUEST",
        "-b", "isolinux/isolinux.bin", "-c", "isolinux/boot.cat",
        "-no-emul-boot", "-boot-load-size", "4", "-boot-info-table", iso_root,
    )  # fmt: skip
    run(os.path.join(root, "usr/bin/isohybrid"), out)


def build(target: str, the_plan: dict) -> dict:
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="build-", dir=os.path.dirname(target))
    try:
        names = list(the_plan["versions"])
        say("downloading %d Debian packages (kernel %s)" % (len(names), the_plan["kernel"]))
        debs = debian_packages.download(names, os.path.join(work, "debs"))
        root = os.path.join(work, "root")
        say("unpacking")
        debian_packages.unpack(debs, root)
        kernel_version = the_plan["kernel"][len("linux-image-") :]
        staging = os.path.join(work, "initrd")
        os.makedirs(os.path.join(staging, "bin"))
        initrd = os.path.join(work, "initrd.gz")
        say("packing the initramfs (busybox, qemu-ga, tinyproxy, libraries, virtio modules)")
        contents = build_initramfs(root, kernel_version, staging, initrd)
        iso = os.path.join(work, "guest.iso")
        say("making the hybrid ISO (isolinux + isohybrid)")
        build_iso(root, kernel_version, initrd, os.path.join(work, "iso"), iso)
        out = os.path.join(work, "image")
        os.makedirs(out)
        image = os.path.join(out, "guest.qcow2")
        say("converting to qcow2")
        run("qemu-img", "convert", "-q", "-c", "-f", "raw", "-O", "qcow2", iso, image)
        # The same static busybox serves DHCP (udhcpd) inside the tests' network namespace.
        shutil.copy2(os.path.join(root, "bin/busybox"), os.path.join(out, "busybox"))
        with open(image, "rb") as handle:
            sha256 = hashlib.sha256(handle.read()).hexdigest()
        facts = {
            "sha256": sha256,
            "size": os.path.getsize(image),
            "iso_size": os.path.getsize(iso),
            "initrd_size": os.path.getsize(initrd),
            "kernel": kernel_version,
            "cmdline": KERNEL_CMDLINE,
            "versions": the_plan["versions"],
            "contents": contents,
            "build_seconds": round(time.monotonic() - started, 1),
        }
        write(os.path.join(out, "image.json"), json.dumps(facts, indent=2, sort_keys=True) + "\n")
        os.rename(out, target)
        say("built %s (%.1f MB) in %.1fs" % (image, facts["size"] / 1e6, facts["build_seconds"]))
        return facts
    finally:
        shutil.rmtree(work, ignore_errors=True)


def prune(keep: str, older_than: float = 86400.0) -> None:
    """Images of other keys unused for a day (an older kernel or init) go; a younger one may
    still serve another checkout's session on this machine."""
    for name in os.listdir(CACHE_ROOT):
        path = os.path.join(CACHE_ROOT, name)
        facts = os.path.join(path, "image.json")
        if path != keep and os.path.exists(facts) and time.time() - os.path.getmtime(facts) > older_than:
            say("removing the image of an old key: %s" % path)
            shutil.rmtree(path, ignore_errors=True)


def refresh_package_lists() -> None:
    """Stale lists name versions the mirror no longer serves (a kernel security update
    replaces the old package): refresh them once and plan again."""
    say("refreshing the Debian package lists (apt-get update)")
    run("apt-get", "update", "-qq", "-o", "DPkg::Lock::Timeout=900")


def ensure() -> str:
    """The image directory, built first if this machine has none for the current key."""
    os.makedirs(CACHE_ROOT, exist_ok=True)
    for attempt in (1, 2):
        try:
            the_plan = plan()
            target = os.path.join(CACHE_ROOT, the_plan["key"])
            if os.path.exists(os.path.join(target, "image.json")):
                os.utime(os.path.join(target, "image.json"))  # last used: prune() keeps it
                return target
            with open(os.path.join(CACHE_ROOT, ".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not os.path.exists(os.path.join(target, "image.json")):
                    build(target, the_plan)
                    prune(keep=target)
            return target
        except (subprocess.CalledProcessError, RuntimeError) as exc:
            if attempt == 2:
                raise
            say("planning or downloading failed (%s)" % exc)
            refresh_package_lists()
    raise AssertionError("unreachable")


def main() -> int:
    print(ensure())
    return 0


if __name__ == "__main__":
    sys.exit(main())
