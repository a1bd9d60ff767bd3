"""Benchmark: a ProxyPool of N members to Ready and rolled, against N individual Proxies.

Starts the test control plane (tests/cluster: kube-apiserver, etcd, scheduler, controller
manager, kwok sized for the run), installs the shipped CRDs and RBAC and starts the controller
as a real process (ServiceAccount token, shipped RBAC) with one kubernetes provider whose Pods
kwok brings to Running. Then, in one namespace each:

* ``pool``: one ProxyPool of N replicas (default strategy: maxSurge 25 %, maxUnavailable 25 %);
  seconds until the pool is Ready, then a rolling rotation (the rotate-now annotation): seconds
  until every member is a new one and the pool is Ready again, and the fewest Ready members seen
  (sampled every second) against the budget's floor ``N - maxUnavailable``;
* ``proxies``: N individual Proxies, what a user without pools writes; seconds until all are
  Ready, then the same rotation done by hand the simple way (delete all N, create N new):
  seconds until N new ones are Ready, and the fewest Ready seen.

Each mode also reports the controller's CPU seconds (with its ansible-runner children) and its
runner runs over the mode. The proxy health engine is off (kwok Pods run no Squid), so Ready
means Running.

Usage: .venv/bin/python bench/pool_scale.py [--count 300] [--budget 900]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "controller"), os.path.join(ROOT, "bench")]

import workdirs  # noqa: E402
from cluster import kube_testlib  # noqa: E402
from controller_scale import (  # noqa: E402
    KWOK_TIMING,
    cpu_seconds,
    create_proxies,
    kwok_plane,
    kwok_providers,
    runner_runs,
)
from kubernetes import client as k8s  # noqa: E402

from controller import e2e_lib  # noqa: E402

GROUP, VERSION = "crawl.example.com", "v1alpha1"
ROTATE = "crawl.example.com/rotate-now"
TIMING = [
    "--provisioning-poll",
    "2",
    "--running-poll",
    "600",
    "--deletion-poll",
    "2",
    "--probe-interval",
    "0",
]


def proxies(custom, namespace: str) -> list:
    return custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "proxies")["items"]


def ready(obj: dict) -> bool:
    return (
        not obj["metadata"].get("deletionTimestamp")
        and e2e_lib.condition(obj, "Ready").get("status") == "True"
    )


class Sampler:
    """Polls the namespace's Proxies every second until ``done(items)`` or the budget; keeps the
    fewest Ready seen and prints progress every 30 s."""

    def __init__(self, custom, namespace: str, what: str, budget: float):
        self.custom, self.namespace, self.what, self.budget = custom, namespace, what, budget

    def run(self, done) -> dict:
        started, last, fewest = time.monotonic(), 0.0, None
        while True:
            elapsed = time.monotonic() - started
            items = proxies(self.custom, self.namespace)
            count = sum(1 for o in items if ready(o))
            fewest = count if fewest is None else min(fewest, count)
            if elapsed - last >= 30:
                print(
                    "  %s: %d Ready of %d after %.0fs" % (self.what, count, len(items), elapsed), flush=True
                )
                last = elapsed
            if done(items) or elapsed > self.budget:
                return {"seconds": elapsed, "fewest": fewest, "complete": bool(done(items))}
            time.sleep(1.0)


def pool_mode(custom, namespace: str, count: int, budget: float) -> dict:
    body = {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "ProxyPool",
        "metadata": {"name": "bench"},
        "spec": {"replicas": count, "template": {"provider": "k8s"}},
    }
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "proxypools", body)
    first = Sampler(custom, namespace, "pool to Ready", budget).run(
        lambda items: sum(1 for o in items if ready(o)) == count and len(items) == count
    )
    before = {o["metadata"]["name"] for o in proxies(custom, namespace)}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "proxypools", "bench", {"metadata": {"annotations": {ROTATE: stamp}}}
    )
    roll = Sampler(custom, namespace, "pool rotation", budget).run(
        lambda items: (
            len(items) == count
            and sum(1 for o in items if ready(o)) == count
            and not before & {o["metadata"]["name"] for o in items}
        )
    )
    custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "proxypools", "bench")
    return {"ready": first, "rotate": roll, "floor": count - count // 4}


def proxies_mode(custom, namespace: str, count: int, budget: float) -> dict:
    create_proxies(custom, namespace, count, "p%04d")
    first = Sampler(custom, namespace, "Proxies to Ready", budget).run(
        lambda items: sum(1 for o in items if ready(o)) == count
    )
    delete_all(custom, namespace)
    create_proxies(custom, namespace, count, "q%04d")
    roll = Sampler(custom, namespace, "Proxies replaced", budget).run(
        lambda items: sum(1 for o in items if ready(o) and o["metadata"]["name"].startswith("q")) == count
    )
    delete_all(custom, namespace)
    return {"ready": first, "rotate": roll, "floor": None}


def delete_all(custom, namespace: str) -> None:
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda o: custom.delete_namespaced_custom_object(
                    GROUP, VERSION, namespace, "proxies", o["metadata"]["name"]
                ),
                [o for o in proxies(custom, namespace) if not o["metadata"].get("deletionTimestamp")],
            )
        )


def run_mode(admin, plane, workdir: str, mode: str, count: int, budget: float) -> dict:
    namespace = kube_testlib.create_namespace(admin, prefix="bench-" + mode)
    custom = k8s.CustomObjectsApi(admin)
    kubeconfig = e2e_lib.service_account_kubeconfig(
        admin, plane, os.path.join(workdir, namespace + ".kubeconfig")
    )
    proc = e2e_lib.ControllerProcess(
        tempfile.mkdtemp(prefix=mode + "-", dir=workdir),
        kubeconfig,
        kwok_providers(kubeconfig, "bench"),
        namespace,
        "lease-" + namespace,
    )
    proc.start(extra_args=KWOK_TIMING)
    proc.wait_ready()
    try:
        row = (pool_mode if mode == "pool" else proxies_mode)(custom, namespace, count, budget)
        row.update(mode=mode, count=count, cpu=cpu_seconds(proc.proc.pid), runs=runner_runs(proc.metrics()))
        kube_testlib.wait_for("members gone", lambda: not proxies(custom, namespace), timeout=1200)
    finally:
        proc.stop()
    kube_testlib.delete_namespace(admin, namespace)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--modes", default="pool,proxies")
    parser.add_argument("--budget", type=float, default=900.0, help="seconds per phase before giving up")
    args = parser.parse_args()
    workdir = workdirs.make("bench-pool-")
    plane, admin = kwok_plane(workdir, args.count * 3 + 100)
    rows = []
    try:
        for mode in args.modes.split(","):
            print("== %s, N=%d (load average %.1f)" % (mode, args.count, os.getloadavg()[0]), flush=True)
            rows.append(run_mode(admin, plane, workdir, mode, args.count, args.budget))
    finally:
        plane.stop()
    print()
    print("N=%d on the kubernetes provider (kwok), 2 cores; seconds are wall time" % args.count)
    print(
        "%-8s %12s %12s %18s %10s %8s"
        % ("mode", "to Ready s", "rotation s", "fewest Ready (floor)", "cpu s", "runs")
    )
    for r in rows:
        floor = (
            "%d (%d)" % (r["rotate"]["fewest"], r["floor"])
            if r["floor"] is not None
            else "%d (-)" % r["rotate"]["fewest"]
        )
        print(
            "%-8s %12s %12s %18s %10.1f %8d"
            % (
                r["mode"],
                "%.1f%s" % (r["ready"]["seconds"], "" if r["ready"]["complete"] else " (budget)"),
                "%.1f%s" % (r["rotate"]["seconds"], "" if r["rotate"]["complete"] else " (budget)"),
                floor,
                r["cpu"],
                r["runs"],
            )
        )
    by = {r["mode"]: r for r in rows}
    if "pool" in by and "proxies" in by:
        p, q = by["pool"], by["proxies"]
        print(
            "pool/proxies: to Ready %.2fx, rotation %.2fx, cpu %.2fx"
            % (
                p["ready"]["seconds"] / q["ready"]["seconds"],
                p["rotate"]["seconds"] / q["rotate"]["seconds"],
                p["cpu"] / max(0.1, q["cpu"]),
            )
        )


if __name__ == "__main__":
    main()
