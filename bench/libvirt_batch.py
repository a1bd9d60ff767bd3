"""Benchmark: N concurrent creates, then N deletes, of the kvm2 provider on one real host.

Starts the test hypervisor of tests/contract/libvirt_host.py (libvirtd, virtlogd, sshd on
loopback), runs the creates with N threads on one provider (as proxy_instance's batch form
does), and prints the wall time, the SSH dials, and where the time went per libvirt call.
Usage: .venv/bin/python bench/libvirt_batch.py [N] [threads]
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import os
import re
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, ".venv", "collections"), os.path.join(ROOT, "tests")]

from contract.libvirt_backend import LibvirtContractBackend  # noqa: E402
from contract.libvirt_fixtures import Images  # noqa: E402
from contract.libvirt_host import LibvirtHost  # noqa: E402

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline  # noqa: E402

CALL = re.compile(r"libvirt call host=\S+ method=(\S+) .*seconds=([0-9.]+)")


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.calls = collections.defaultdict(list)

    def emit(self, record):
        match = CALL.search(record.getMessage())
        if match:
            self.calls[match.group(1)].append(float(match.group(2)))


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    collect = Collect()
    logger = logging.getLogger("crawl.egress_proxies.providers.libvirt")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(collect)
    host = LibvirtHost().start()
    print(host.choice.line)
    images = Images()
    try:
        harness = LibvirtContractBackend(host, images)
        provider = harness.provider
        provider.create(harness.request("warm-" + uuid.uuid4().hex), Deadline(120))  # caches the image
        collect.calls.clear()
        reqs = [harness.request("bench-%d-%s" % (i, uuid.uuid4().hex[:6])) for i in range(count)]
        logins = host.ssh_logins()
        start = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            ids = list(pool.map(lambda r: provider.create(r, Deadline(600)), reqs))
        created = time.monotonic() - start
        create_calls = dict(collect.calls)
        collect.calls.clear()
        start = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda i: provider.delete(i, Deadline(600)), ids))
        deleted = time.monotonic() - start
        print("domain type: %s, %d instances, %d threads" % (host.domain_type, count, threads))
        print(
            "create: %.2fs wall, delete: %.2fs wall, SSH dials: %d"
            % (created, deleted, host.ssh_logins() - logins)
        )
        for label, calls in (("create", create_calls), ("delete", dict(collect.calls))):
            print("%s calls (method: count, total s, max s):" % label)
            for method, times in sorted(calls.items(), key=lambda kv: -sum(kv[1])):
                print("  %-18s %4d %8.2f %7.2f" % (method, len(times), sum(times), max(times)))
        harness.teardown()
    finally:
        images.server.close()
        host.stop()


if __name__ == "__main__":
    main()
