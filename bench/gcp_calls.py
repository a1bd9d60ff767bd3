"""Prints which Compute Engine API calls the gcp provider makes, measured against the fake API.

Figures (request counts, not timings): one create-to-Running lifecycle through the provider and
through ``proxy_instance`` (wait: true), a delete, one Check, and one list / ``proxy_info`` over
100 instances. Run from the repository root after ``make bootstrap-test``:

    .venv/bin/python bench/gcp_calls.py
"""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, ".venv", "collections"), os.path.join(ROOT, "tests")]

from contract.gcp_backend import GcpBackend  # noqa: E402
from integration.playbook import run_playbook  # noqa: E402

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import RUNNING  # noqa: E402
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline  # noqa: E402

PLACEMENT = {
    "region": "us-central1",
    "zone": "us-central1-a",
    "machine_type": "e2-small",
    "image": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
}


def show(title: str, fake, since: float) -> None:
    lines = ["%s %s" % (r.method, r.path) for r in fake.log() if r.at >= since]
    print("%s: %d request(s)" % (title, len(lines)))
    for line, run in itertools.groupby(lines):  # in order, repeats folded
        print("    %3d x %s" % (len(list(run)), line))


def main() -> None:
    harness = GcpBackend()
    fake, provider = harness.fake, harness.provider
    fake.state.quotas["us-central1"].update(INSTANCES=500.0, CPUS=1000.0, IN_USE_ADDRESSES=500.0)
    try:
        print("fake timing: %s" % (fake.state.timing,))
        start = time.time()
        req = harness.request(str(uuid.uuid4()))
        provider_id = provider.create(req, Deadline(10))
        while provider.get(provider_id, Deadline(10)).state != RUNNING:
            time.sleep(0.1)
        show("provider create + get every 0.1 s until Running", fake, start)
        start = time.time()
        provider.delete(provider_id, Deadline(10))
        show("provider delete", fake, start)
        start = time.time()
        provider.check(Deadline(10))
        show("provider check (no regions configured)", fake, start)
        for _index in range(100):
            provider.create(harness.request(str(uuid.uuid4())), Deadline(10))
        start = time.time()
        count = len(provider.list_by_tag(Deadline(10)))
        show("provider list_by_tag over %d instances" % count, fake, start)

        defaults = {
            "providers": [
                {
                    "name": "gcp",
                    "type": "gcp",
                    "gcp": {"project": "fake-project", "apiEndpoint": fake.endpoint},
                }
            ],
            "installation": harness.installation,
        }
        with tempfile.TemporaryDirectory() as tmp:
            start = time.time()
            item = {"provider": "gcp", "uid": str(uuid.uuid4()), "placement": PLACEMENT, "wait": True}
            run = run_playbook(
                Path(tmp),
                [{"name": "create", "crawl.egress_proxies.proxy_instance": item}],
                module_defaults=defaults,
            )
            assert run.rc == 0, run.stdout[-2000:]
            show("proxy_instance wait=true, create to Running (module polls every 1 s)", fake, start)
            start = time.time()
            run = run_playbook(
                Path(tmp), [{"name": "info", "crawl.egress_proxies.proxy_info": {}}], module_defaults=defaults
            )
            assert run.rc == 0, run.stdout[-2000:]
            show("proxy_info over %d instances" % len(run["info"]["instances"]), fake, start)
        for instance in provider.list_by_tag(Deadline(30)):
            provider.delete(instance.id, Deadline(10))
    finally:
        harness.teardown()


if __name__ == "__main__":
    main()
