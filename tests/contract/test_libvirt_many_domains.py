"""A hypervisor with hundreds of domains that are not ours: listing, orphan GC and the health
check must still answer within the provider's own deadlines.

libvirt 9.0's libssh transport (``qemu+libssh://``) stalls on replies of some sizes (a
``listAllDomains`` of 150 domains did, indefinitely: docs/libvirt-provider.md, "Connections"),
so each step defines more domains behind the provider's back and lists again. The figures
(list and check seconds per domain count) are printed for ``-s``; nothing here asserts a time
beyond the deadlines the provider itself is given.
"""

from __future__ import annotations

import time
import uuid

import pytest
from integration.playbook import run_playbook

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from contract import libvirt_fixtures
from contract.libvirt_backend import HOST_NAME, PROVIDER_NAME, LibvirtContractBackend
from contract.libvirt_host import unmarked_domain_xml

# The harness's own provider name: each kvm2 provider lists (and so collects and deletes) only the
# domains it made, and the harness's teardown must see what the modules made.
PROVIDER = PROVIDER_NAME

pytestmark = [pytest.mark.libvirt, pytest.mark.playbook]

libvirt_host = libvirt_fixtures.libvirt_host
image_host = libvirt_fixtures.image_host

STEPS = (150, 400, 1000)  # domain counts on the host; 150 stalled libssh forever, measured
LIST_DEADLINE = 30.0


@pytest.fixture
def crowded(libvirt_host, image_host):
    """A harness with two instances of its own; the unmarked domains it adds are removed after."""
    harness = LibvirtContractBackend(libvirt_host, image_host)
    made = []

    def crowd(total: int) -> None:
        conn = libvirt_host.direct()
        while len(made) < total:
            name = "many-%04d" % len(made)
            conn.defineXML(unmarked_domain_xml(name))
            made.append(name)

    try:
        yield harness, crowd
    finally:
        try:
            harness.teardown()
        finally:
            conn = libvirt_host.direct()
            for name in made:
                conn.lookupByName(name).undefine()


def timed(call):
    start = time.monotonic()
    value = call()
    return value, time.monotonic() - start


def test_listing_and_check_answer_among_many_foreign_domains(tmp_path, crowded):
    harness, crowd = crowded
    provider = harness.provider
    ours = sorted(
        provider.create(harness.request(uid), Deadline(120)) for uid in (str(uuid.uuid4()), str(uuid.uuid4()))
    )
    figures = []
    for total in STEPS:
        crowd(total)
        fresh = harness.another_provider(harness.installation)  # a fresh connection each step
        listed, list_seconds = timed(lambda p=fresh: p.list_by_tag(Deadline(LIST_DEADLINE)))
        assert sorted(i.id for i in listed) == ours, total
        (status,), check_seconds = timed(lambda p=fresh: p.check(Deadline(LIST_DEADLINE)))
        assert (status.target, status.ready, status.reason) == (HOST_NAME, True, contract.REASON_REACHABLE), (
            total,
            status,
        )
        line = "%d foreign domains: list_by_tag %.2fs, check %.2fs" % (total, list_seconds, check_seconds)
        figures.append(line)
    print("\n" + "\n".join(figures))

    defaults = {
        "providers": [{"name": PROVIDER, "type": "kvm2", "kvm2": harness.block()}],
        "installation": harness.installation,
    }
    run = run_playbook(
        tmp_path,
        [
            {"name": "info", "crawl.egress_proxies.proxy_info": {"provider": PROVIDER}},
            {
                "name": "gc",
                "crawl.egress_proxies.proxy_gc": {"provider": PROVIDER, "live_uids": [], "min_age": "0"},
                "check_mode": True,
            },
        ],
        module_defaults=defaults,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert sorted(i["id"] for i in run["info"]["instances"]) == ours
    assert sorted(i["id"] for i in run["gc"]["would_delete"]) == ours  # a dry run: both still there
    assert sorted(i.id for i in provider.list_by_tag(Deadline(LIST_DEADLINE))) == ours
