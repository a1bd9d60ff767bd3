"""Benchmark: a burst of creates from several module processes at once, with and without the
providers file's ``rateLimit``, counted at the backend (the Compute Engine fake's request log).

Runs ``--processes`` ``ansible-playbook`` processes at once, each creating ``--per-process``
VMs with one batched ``proxy_instance`` task (the controller's runs in flight, or AWX forks, do
the same), on the gcp provider against the local fake of the REST API. Prints, per mode: the
creates sent (``instances.insert`` requests at the fake), the highest count of them in any
one-second window, the wall time, and the creates that failed ``transient`` because no token
came before their deadline. Then deletes everything. A token is one provider contract call, and
``proxy_instance`` makes a get before each create and polls after it, so creates per second stay
below ``callsPerSecond``.

Usage: .venv/bin/python bench/rate_limit.py [--processes 3] [--per-process 40] [--rate 10 --burst 10]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [
    os.path.join(ROOT, ".venv", "collections"),
    os.path.join(ROOT, "tests"),
    os.path.join(ROOT, "bench"),
]

from contract.gcp_backend import GcpBackend  # noqa: E402
from gcp_calls import PLACEMENT  # noqa: E402
from integration.playbook import run_playbook  # noqa: E402

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline  # noqa: E402


def peak_per_second(times: list) -> int:
    times = sorted(times)
    best, start = 0, 0
    for end, at in enumerate(times):
        while at - times[start] >= 1.0:
            start += 1
        best = max(best, end - start + 1)
    return best


def burst(harness, tmp: str, processes: int, per_process: int, limit: dict | None) -> dict:
    entry = {
        "name": "gcp",
        "type": "gcp",
        "gcp": {"project": "fake-project", "apiEndpoint": harness.fake.endpoint},
    }
    if limit:
        entry["rateLimit"] = limit
    defaults = {"providers": [entry], "installation": harness.installation}
    env = {"EGRESS_PROXIES_RATE_LIMIT_DIR": os.path.join(tmp, "buckets-%s" % uuid.uuid4().hex[:6])}

    def one(index: int):
        items = [{"uid": str(uuid.uuid4()), "placement": PLACEMENT} for _item in range(per_process)]
        task = {
            "provider": "gcp",
            "instances": items,
            "timeout": 60,
            "concurrency": 8,
            "invalid_items": "fail_item",
        }
        workdir = Path(tmp, "p%d-%s" % (index, uuid.uuid4().hex[:6]))
        workdir.mkdir()
        return run_playbook(
            workdir,
            [{"name": "burst", "crawl.egress_proxies.proxy_instance": task, "ignore_errors": True}],
            module_defaults=defaults,
            env=env,
        )

    since = time.time()
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(processes) as pool:
        runs = list(pool.map(one, range(processes)))
    seconds = time.monotonic() - started
    inserts = [
        r.at
        for r in harness.fake.log()
        if r.at >= since and r.method == "POST" and r.path.endswith("/instances")
    ]
    requests = [r.at for r in harness.fake.log() if r.at >= since]
    calls = sum(len(run["burst"].get("telemetry") or []) for run in runs)
    limited = sum(str(run["burst"]).count("no call slot before the deadline") for run in runs)
    return {
        "inserts": len(inserts),
        "peak": peak_per_second(inserts),
        "requests_peak": peak_per_second(requests),
        "seconds": seconds,
        "limited": limited,
        "calls": calls,
    }


def clean(harness) -> None:
    for instance in harness.provider.list_by_tag(Deadline(60)):
        harness.provider.delete(instance.id, Deadline(30))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--per-process", type=int, default=40)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--burst", type=int, default=10)
    args = parser.parse_args()
    harness = GcpBackend()
    harness.fake.state.quotas["us-central1"].update(INSTANCES=5000.0, CPUS=10000.0, IN_USE_ADDRESSES=5000.0)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, limit in (
                ("no rateLimit", None),
                (
                    "rateLimit %.6g/s burst %d" % (args.rate, args.burst),
                    {"callsPerSecond": args.rate, "burst": args.burst},
                ),
            ):
                print("running: %s" % label, file=sys.stderr, flush=True)
                rows.append((label, burst(harness, tmp, args.processes, args.per_process, limit)))
                clean(harness)
    finally:
        harness.teardown()
    total = args.processes * args.per_process
    print(
        "\n%d processes x %d creates; command: bench/rate_limit.py %s"
        % (args.processes, args.per_process, " ".join(sys.argv[1:]))
    )
    print(
        "| mode | creates sent | peak creates in 1 s | peak API requests in 1 s | provider calls "
        "| calls/s | wall s | failed: no token in time |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, row in rows:
        print(
            "| %s | %d/%d | %d | %d | %d | %.1f | %.1f | %d |"
            % (
                label,
                row["inserts"],
                total,
                row["peak"],
                row["requests_peak"],
                row["calls"],
                row["calls"] / row["seconds"],
                row["seconds"],
                row["limited"],
            )
        )
    allowed = args.burst + args.rate  # the most any one-second window may hold
    free, limited = rows[0][1], rows[1][1]
    print(
        "\npeak with the limit: %d per second (at most %d allowed in any second); without: %d (%.1fx)"
        % (limited["peak"], allowed, free["peak"], free["peak"] / max(1, limited["peak"]))
    )


if __name__ == "__main__":
    main()
