"""Benchmark: N Running Proxies held by the controller, what that costs per minute.

Starts the test control plane with kwok, creates N Proxies on the kubernetes provider, waits
until all are Ready, then holds them for ``--hold`` seconds with the Running poll at
``--running-poll`` and measures, for each of ``--variants`` (``rounds``: this controller, every
Running Proxy of a provider polled in one round per interval; ``spread``: ``--no-poll-rounds``,
each Proxy polled one interval after its last answer, as before issue 18's rounds):

* controller CPU (its own plus every child it waited for: ansible-runner, ansible-playbook and
  the modules) as cores on average over the hold, and peak RSS;
* ansible-runner runs and Proxies polled per run during the hold;
* how long Running Proxies went between two answered polls (``egress_proxies_poll_gap_seconds``:
  the largest bucket reached and how many gaps passed twice the Running poll interval);
* how late polls were (the work queue's ``workqueue_queue_duration_seconds``: time a key waited
  after it was due; the bucket bound that 99 % stayed under, and the largest bucket reached);
* API server requests per second during the hold, by resource (from kube-apiserver's own
  ``apiserver_request_total``: every client, its modules included), and the controller's own
  (its ``rest_client_requests_total``);
* with ``--churn F``: a third into the hold, F of the Proxies deleted and as many new ones
  created, and the seconds until every new one is Ready (the issue asks 2 minutes at most).

Usage: .venv/bin/python bench/controller_steady.py [--count 1000] [--hold 120] [--running-poll 60]
       [--variants rounds,spread] [--min-batch-interval 0] [--churn 0.1]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "controller"), os.path.join(ROOT, "bench")]

from cluster import kube_testlib  # noqa: E402
from controller_scale import (  # noqa: E402
    cpu_seconds,
    create_proxies,
    kwok_plane,
    kwok_providers,
    peak_rss_mib,
    ready_count,
    runner_runs,
)
from kubernetes import client as k8s  # noqa: E402

from controller import e2e_lib  # noqa: E402


def histogram(metrics: str, name: str) -> list:
    """[(le, cumulative count)] of one unlabelled-but-name histogram in a Prometheus text page."""
    out = []
    for le, value in re.findall(r'^%s_bucket\{le="([^"]+)",name="proxy"\} (\S+)$' % name, metrics, re.M):
        out.append((float("inf") if le == "+Inf" else float(le), float(value)))
    return sorted(out)


def running_gaps(metrics: str) -> list:
    """[(le, cumulative count)] of the Running Proxies' poll gaps (egress_proxies_poll_gap_seconds)."""
    pattern = r'^egress_proxies_poll_gap_seconds_bucket\{le="([^"]+)",state="Running"\} (\S+)$'
    found = re.findall(pattern, metrics, re.M)
    return sorted((float("inf") if le == "+Inf" else float(le), float(v)) for le, v in found)


def gap_text(before: list, after: list, interval: float) -> str:
    """The largest gap bucket reached during the hold, and how many gaps passed twice the interval."""
    if not after:
        return "-"
    counts = dict(before)
    delta = [(le, c - counts.get(le, 0.0)) for le, c in after]
    total = delta[-1][1]
    if not total:
        return "no gaps"
    top = next(le for le, c in delta if c >= total)
    within = max((c for le, c in delta if le <= 2 * interval), default=0.0)
    return "max <= %gs; %d of %d over %gs" % (top, total - within, total, 2 * interval)


def lateness(before: list, after: list) -> tuple:
    """(bound 99 % of the hold's hand-outs stayed under, largest bucket bound reached)."""
    delta = [(le, a - b) for (le, a), (_le, b) in zip(after, before, strict=True)]
    total = delta[-1][1] if delta else 0
    p99 = next((le for le, c in delta if c >= 0.99 * total), float("inf")) if total else 0.0
    top = next((le for le, c in delta if c >= total), float("inf")) if total else 0.0
    return p99, top, int(total)


def api_requests(admin) -> dict:
    # The client's own transport (its TLS client certificate and CA): kube-apiserver's /metrics.
    answer = admin.call_api("GET", admin.configuration.host + "/metrics", _request_timeout=30)
    answer.read()
    text = answer.data.decode()
    out: dict = {}
    for labels, value in re.findall(r"^apiserver_request_total\{([^}]*)\} (\S+)$", text, re.M):
        resource = re.search(r'resource="([^"]*)"', labels)
        key = resource.group(1) if resource else ""
        out[key] = out.get(key, 0.0) + float(value)
    return out


VARIANTS = {"rounds": [], "spread": ["--no-poll-rounds"]}


def controller_requests(metrics: str) -> float:
    """Requests the controller itself sent (its rest_client_requests_total, every code)."""
    return sum(float(v) for v in re.findall(r"^rest_client_requests_total\{[^}]*\} (\S+)$", metrics, re.M))


def churn(custom, namespace: str, count: int, hold_seconds: float) -> dict:
    """A third into the hold, delete ``count`` held Proxies and create ``count`` new ones; returns
    the seconds until every new one was Ready (None when not within the rest of the hold)."""
    time.sleep(hold_seconds / 3)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda i: custom.delete_namespaced_custom_object(
                    "crawl.example.com", "v1alpha1", namespace, "proxies", "s%05d" % i
                ),
                range(count),
            )
        )
    create_proxies(custom, namespace, count, "n%05d")
    deadline = started + hold_seconds * 2 / 3
    while time.monotonic() < deadline:
        fresh = [o for o in e2e_lib.proxies(custom, namespace) if o["metadata"]["name"].startswith("n")]
        ready = sum(1 for o in fresh if e2e_lib.is_ready(o))
        if ready == count:
            return {"count": count, "seconds": time.monotonic() - started}
        time.sleep(5)
    return {"count": count, "seconds": None}


def progress(ready, count: int, variant: str):
    """A probe for ``wait_for`` that is true once ``ready()`` reaches ``count``, printing how many
    are Ready once a minute (10,000 Proxies take half an hour to come up here)."""
    started, last = time.monotonic(), [0.0]

    def probe() -> bool:
        done = ready()
        elapsed = time.monotonic() - started
        if elapsed - last[0] >= 60:
            print("  %s: %d of %d Ready after %.0fs" % (variant, done, count, elapsed), flush=True)
            last[0] = elapsed
        return done == count

    return probe


def hold(admin, plane, workdir: str, count: int, variant: str, args) -> dict:
    interval, hold_seconds, poll = args.min_batch_interval, args.hold, args.running_poll
    namespace = kube_testlib.create_namespace(admin, prefix="steady")
    custom = k8s.CustomObjectsApi(admin)
    kubeconfig = e2e_lib.service_account_kubeconfig(
        admin, plane, os.path.join(workdir, "sa-%s.kubeconfig" % namespace)
    )
    providers = kwok_providers(kubeconfig, "steady-%s" % namespace[-6:])
    rundir = tempfile.mkdtemp(prefix="steady-%s-" % variant, dir=workdir)
    proc = e2e_lib.ControllerProcess(rundir, kubeconfig, providers, namespace, "lease-" + namespace)
    timing = [
        "--provisioning-poll",
        "2",
        "--running-poll",
        str(poll),
        "--deletion-poll",
        "2",
        "--probe-interval",
        "0",
    ]
    extra = [*timing, *VARIANTS[variant], "--min-batch-interval", str(interval), "--gc-interval", "0"]
    proc.start(extra_args=extra)
    try:
        proc.wait_ready()
        create_proxies(custom, namespace, count, "s%05d")
        # Listing every Proxy costs the API server and this process too: less often at large N.
        kube_testlib.wait_for(
            "all Ready",
            progress(lambda: ready_count(custom, namespace), count, variant),
            timeout=max(1800, count * 0.3),
            interval=max(2, count / 1000),
        )
        print("  %s: %d Ready; holding %ds" % (variant, count, hold_seconds), flush=True)
        metrics0 = proc.metrics()
        cpu0, runs0, api0 = cpu_seconds(proc.proc.pid), runner_runs(metrics0), api_requests(admin)
        queue0 = histogram(metrics0, "workqueue_queue_duration_seconds")
        gaps0 = running_gaps(metrics0)
        began = time.monotonic()
        churned = churn(custom, namespace, int(count * args.churn), hold_seconds) if args.churn else None
        time.sleep(max(0.0, hold_seconds - (time.monotonic() - began)))
        metrics1 = proc.metrics()
        cpu1, runs1, api1 = cpu_seconds(proc.proc.pid), runner_runs(metrics1), api_requests(admin)
        p99, top, handed = lateness(queue0, histogram(metrics1, "workqueue_queue_duration_seconds"))
        gaps = gap_text(gaps0, running_gaps(metrics1), poll)
        rss = peak_rss_mib(proc.proc.pid)
        proc.stop()
    finally:
        if proc.proc.poll() is None:
            proc.kill()
    rates = {k: (api1.get(k, 0) - api0.get(k, 0)) / hold_seconds for k in api1}
    own = (controller_requests(metrics1) - controller_requests(metrics0)) / hold_seconds
    # The namespace stays Terminating (the Proxies keep their finalizer with no controller left);
    # the plane goes at the end of the run, and kwok's node has room for every measured run.
    kube_testlib.delete_namespace(admin, namespace)
    return {
        "variant": variant,
        "cores": (cpu1 - cpu0) / hold_seconds,
        "rss": rss,
        "runs": runs1 - runs0,
        "handed": handed,
        "p99": p99,
        "top": top,
        "gaps": gaps,
        "api": sum(rates.values()),
        "own_api": own,
        "churned": churned,
        "api_top": sorted(((v, k) for k, v in rates.items() if v > 0.01), reverse=True)[:4],
    }


def churn_text(churned: dict | None) -> str:
    if not churned:
        return "-"
    if churned["seconds"] is None:
        return "%d replaced, not all Ready within the hold" % churned["count"]
    return "%d replaced, all Ready in %.0fs" % (churned["count"], churned["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--hold", type=float, default=120.0)
    parser.add_argument("--running-poll", type=float, default=60.0)
    parser.add_argument("--variants", default="rounds,spread")
    parser.add_argument("--min-batch-interval", type=float, default=0.0)
    parser.add_argument(
        "--churn", type=float, default=0.0, help="fraction deleted and recreated during the hold (0.1: 10 %%)"
    )
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-steady-")
    plane, admin = kwok_plane(workdir, args.count * 2 + 100)
    rows = []
    try:
        for variant in args.variants.split(","):
            rows.append(hold(admin, plane, workdir, args.count, variant, args))
    finally:
        plane.stop()
    print(
        "\n%d Running Proxies held %ds, Running poll %gs; command: bench/controller_steady.py %s"
        % (args.count, args.hold, args.running_poll, " ".join(sys.argv[1:]))
    )
    print(
        "| polls | CPU cores (with children) | peak RSS MiB | runner runs | keys per run "
        "| poll late p99 / max (bucket) | Running poll gaps | API req/s (all / controller's) "
        "| top resources req/s | churn |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            "| %s | %.2f | %.0f | %d | %.0f | <= %gs / <= %gs | %s | %.1f / %.1f | %s | %s |"
            % (
                r["variant"],
                r["cores"],
                r["rss"],
                r["runs"],
                r["handed"] / max(1, r["runs"]),
                r["p99"],
                r["top"],
                r["gaps"],
                r["api"],
                r["own_api"],
                ", ".join("%s %.1f" % (k or "-", v) for v, k in r["api_top"]),
                churn_text(r["churned"]),
            )
        )
    if len(rows) > 1:
        print(
            "\nCPU ratio %s / %s: %.2fx; runner runs %s / %s: %.2fx"
            % (
                rows[-1]["variant"],
                rows[0]["variant"],
                rows[-1]["cores"] / max(1e-9, rows[0]["cores"]),
                rows[-1]["variant"],
                rows[0]["variant"],
                rows[-1]["runs"] / max(1, rows[0]["runs"]),
            )
        )


if __name__ == "__main__":
    main()
