"""Benchmark: N real guests to Running through the modules, one batched ``proxy_instance`` run
(``instances`` + ``wait``) against the alternative, one ``ansible-playbook`` run per guest.

Everything is real and started here: the test hypervisor of tests/contract/libvirt_host.py
(libvirtd, virtlogd, sshd on loopback), the guest image of tests/guest (built once per machine),
the test network namespace with DHCP. The domain type is the guest-level probe's
(tests/contract/hypervisor_probe.py: KVM only where a KVM guest really booted the image, TCG
otherwise), printed with its reason; N guests booting at once share the machine's cores. Prints
wall times, the ratio, and each guest's address; every guest is checked to carry traffic from
inside the namespace.
Usage: .venv/bin/python bench/libvirt_guest_boot.py [N]   (default 4)
"""

from __future__ import annotations

import os
import pathlib
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, ".venv", "collections"), os.path.join(ROOT, "tests")]

import workdirs  # noqa: E402
from contract.libvirt_backend import HOST_NAME  # noqa: E402
from contract.libvirt_fixtures import Images  # noqa: E402
from contract.libvirt_host import LibvirtHost  # noqa: E402
from guest.fixtures import PROXY_PORT, GuestBackend, load_image, user_data  # noqa: E402
from guest.network import GuestNetwork  # noqa: E402
from integration.playbook import run_playbook  # noqa: E402

PI = "crawl.egress_proxies.proxy_instance"
PLACEMENT = {"zone": HOST_NAME, "machine_type": "small", "image": "guest"}


def up(workdir: pathlib.Path, defaults: dict, uids: list) -> tuple:
    """One playbook run that brings ``uids`` to Running; returns (seconds, instances)."""
    task = {
        "provider": "hv",
        "placement": PLACEMENT,
        "cloud_init": user_data(),
        "wait": True,
        "wait_timeout": 600,
        "instances": [{"uid": u} for u in uids],
    }
    started = time.monotonic()
    run = run_playbook(workdir, [{"name": "up", PI: task}], module_defaults=defaults, timeout=900)
    seconds = time.monotonic() - started
    if run.rc != 0:
        raise SystemExit("playbook failed:\n" + run.stdout[-3000:])
    results = run["up"]["results"]
    if any(r.get("failed") or r["state"] != "Running" for r in results):
        raise SystemExit("not all Running: %r" % results)
    return seconds, results


def down(workdir: pathlib.Path, defaults: dict, results: list) -> None:
    instances = [{"id": r["id"]} for r in results]
    task = {"provider": "hv", "state": "absent", "wait": True, "instances": instances}
    run = run_playbook(workdir, [{"name": "down", PI: task}], module_defaults=defaults, timeout=900)
    if run.rc != 0:
        raise SystemExit("delete failed:\n" + run.stdout[-3000:])


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    image = load_image()
    host = LibvirtHost().start()
    images = Images()
    network = GuestNetwork(image.busybox).start()
    harness = GuestBackend(host, images, image, network)
    choice = host.domain_type_for_guests(image.path)
    print(choice.line)
    workdir = pathlib.Path(workdirs.make("bench-guest-"))
    try:
        defaults = {
            "providers": [{"name": "hv", "type": "kvm2", "kvm2": harness.block()}],
            "installation": harness.installation,
        }
        warm, warm_results = up(workdir, defaults, ["warm-" + uuid.uuid4().hex[:8]])  # caches the image
        down(workdir, defaults, warm_results)
        uids = ["batch-%d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(count)]
        batch, results = up(workdir, defaults, uids)
        for result in results:
            fetched = network.fetch_through(result["ip"], PROXY_PORT)
            if fetched.stdout != network.marker:
                raise SystemExit("no traffic through %s: %s" % (result["ip"], fetched.stderr))
        addresses = [r["ip"] for r in results]
        down(workdir, defaults, results)
        loop, loop_results = 0.0, []
        for i in range(count):
            seconds, one = up(workdir, defaults, ["loop-%d-%s" % (i, uuid.uuid4().hex[:6])])
            loop += seconds
            loop_results += one
        down(workdir, defaults, loop_results)
        print(
            "guests: %d, domain type %s, image %.1f MB"
            % (count, choice.domain_type, image.facts["size"] / 1e6)
        )
        print("first guest (image download + boot): %.1fs" % warm)
        print("batch: one proxy_instance run (instances + wait): %.1fs to all Running" % batch)
        print("loop:  %d proxy_instance runs, one guest each:    %.1fs" % (count, loop))
        print("ratio loop/batch: %.2fx; addresses: %s; traffic through each: ok" % (loop / batch, addresses))
    finally:
        harness.teardown()
        network.stop()
        images.server.close()
        host.stop()


if __name__ == "__main__":
    main()
