"""Benchmark: N Proxies on 3 sharded replicas, one SIGKILLed, against one replica alone.

Starts the test control plane with kwok, then, for ``--replicas`` controller processes with
``--shards`` (and, as the alternative, one replica without sharding), creates N Proxies on the
kubernetes provider and measures:

* seconds until all are Ready, and each replica's share (Proxies of the shards it holds), CPU
  (its own plus its children) and peak RSS;
* with sharding, after one replica is SIGKILLed: seconds until every shard is held by a live
  replica, and whether every Proxy still has exactly one Pod (counted on the API server) with
  the providerID it had: no duplicate, no leak.

Usage: .venv/bin/python bench/controller_shards.py [--count 3000] [--replicas 3] [--shards 3]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "controller"), os.path.join(ROOT, "bench")]

import workdirs  # noqa: E402
from cluster import kube_testlib  # noqa: E402
from cluster.kube_cluster import ControlPlane  # noqa: E402
from controller_scale import cpu_seconds, create_proxies, kwok_providers, peak_rss_mib  # noqa: E402
from egress_proxies_controller.sharding import assignment  # noqa: E402
from kubernetes import client as k8s  # noqa: E402

from controller import e2e_lib, shard_lib  # noqa: E402

LEASE = ["--lease-duration", "30", "--renew-deadline", "20", "--retry-period", "2"]
TIMING = ["--provisioning-poll", "2", "--running-poll", "60", "--probe-interval", "0", "--gc-interval", "0"]


def wait_all_ready(custom, namespace: str, count: int, procs, budget: float) -> tuple:
    started = time.monotonic()
    last = 0.0
    while time.monotonic() - started < budget:
        items = e2e_lib.proxies(custom, namespace)
        done = sum(1 for o in items if e2e_lib.is_ready(o))
        if done == count:
            return items, time.monotonic() - started
        if any(p.proc.poll() is not None for p in procs):
            raise SystemExit(
                "a replica exited:\n" + next(p for p in procs if p.proc.poll() is not None).tail()
            )
        if time.monotonic() - last >= 30:
            print("  %d/%d Ready after %.0fs" % (done, count, time.monotonic() - started), flush=True)
            last = time.monotonic()
        time.sleep(3)
    raise SystemExit("not all Ready within %.0fs" % budget)


def one_setup(admin, plane, workdir: str, count: int, replicas: int, shard_count: int, budget: float) -> dict:
    namespace = kube_testlib.create_namespace(admin, prefix="shards")
    custom = k8s.CustomObjectsApi(admin)
    kubeconfig = e2e_lib.service_account_kubeconfig(
        admin, plane, os.path.join(workdir, "sa-%s.kubeconfig" % namespace)
    )
    providers = kwok_providers(kubeconfig, "shards-%s" % namespace[-6:])
    lease_id = "lease-" + namespace
    procs = []
    for i in range(replicas):
        rundir = tempfile.mkdtemp(prefix="replica-%d-" % i, dir=workdir)
        procs.append(e2e_lib.ControllerProcess(rundir, kubeconfig, providers, namespace, lease_id))
    sharding = ["--shards", str(shard_count)] if shard_count > 1 else []
    row = {"replicas": replicas, "shards": shard_count, "count": count}
    try:
        for proc in procs:
            proc.start(extra_args=[*sharding, *LEASE, *TIMING])
        for proc in procs:
            proc.wait_ready(timeout=120)
        create_proxies(custom, namespace, count, "p%05d")
        items, row["ready_seconds"] = wait_all_ready(custom, namespace, count, procs, budget)
        before = {o["metadata"]["uid"]: o["status"]["providerID"] for o in items}
        row["per_replica"] = per_replica(admin, lease_id, before, procs, shard_count)
        if shard_count > 1:
            row.update(kill_one(admin, custom, namespace, lease_id, procs, before))
    finally:
        for proc in procs:
            if proc.proc is not None and proc.proc.poll() is None:
                proc.kill()
    # The namespace stays Terminating (finalizers, no controller left); the plane goes at the end.
    kube_testlib.delete_namespace(admin, namespace)
    return row


def per_replica(admin, lease_id: str, before: dict, procs, shard_count: int) -> list:
    holders = shard_lib.shard_holders(admin, lease_id) if shard_count > 1 else {}
    counts = collections.Counter(holders.get(assignment.shard_of(uid, shard_count), "") for uid in before)
    out = []
    for proc in procs:
        if proc.proc.poll() is not None:
            continue
        share = counts[shard_lib.identity(proc)] if shard_count > 1 else len(before)
        out.append({"proxies": share, "cpu": cpu_seconds(proc.proc.pid), "rss": peak_rss_mib(proc.proc.pid)})
    return out


def kill_one(admin, custom, namespace: str, lease_id: str, procs, before: dict) -> dict:
    victim = procs[0]
    survivors = procs[1:]
    victim.kill()
    killed = time.monotonic()
    live = {shard_lib.identity(p) for p in survivors}
    kube_testlib.wait_for(
        "shards taken over",
        lambda: all(h in live for h in shard_lib.shard_holders(admin, lease_id).values()),
        timeout=200,
        interval=0.5,
    )
    takeover = time.monotonic() - killed
    e2e_lib.settle(60)  # the new holders have polled the Proxies of the shards they took
    items = e2e_lib.proxies(custom, namespace)
    pods = shard_lib.pods_by_uid(admin, namespace)
    return {
        "takeover": takeover,
        "still_ready": sum(1 for o in items if e2e_lib.is_ready(o)),
        "same_ids": sum(
            1 for o in items if before.get(o["metadata"]["uid"]) == o["status"].get("providerID")
        ),
        "one_pod": sum(1 for uid in before if len(pods.get(uid, ())) == 1),
        "extra_pods": sum(max(0, len(p) - 1) for p in pods.values()) + len(set(pods) - set(before)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds for all to be Ready")
    args = parser.parse_args()
    workdir = workdirs.make("bench-shards-")
    plane = ControlPlane(os.path.join(workdir, "cluster"), max_pods=args.count * 4 + 100, pod_cidr_prefix=18)
    plane.start()
    rows = []
    try:
        admin = kube_testlib.api_client(plane.kubeconfig)
        e2e_lib.install_api(admin)
        e2e_lib.install_kubernetes_provider_rbac(admin)
        for replicas, shard_count in ((args.replicas, args.shards), (1, 1)):
            print(
                "== %d replica(s), %d shard(s), %d Proxies" % (replicas, shard_count, args.count), flush=True
            )
            rows.append(one_setup(admin, plane, workdir, args.count, replicas, shard_count, args.budget))
    finally:
        plane.stop()
    print("\ncommand: bench/controller_shards.py %s" % " ".join(sys.argv[1:]))
    print("| replicas x shards | N | all Ready s | per replica: Proxies / CPU s / peak RSS MiB |")
    print("|---|---|---|---|")
    for r in rows:
        shares = "; ".join("%d / %.0f / %.0f" % (p["proxies"], p["cpu"], p["rss"]) for p in r["per_replica"])
        print(
            "| %d x %d | %d | %.0f | %s |"
            % (r["replicas"], r["shards"], r["count"], r["ready_seconds"], shares)
        )
    for r in rows:
        if "takeover" in r:
            print(
                "SIGKILL of one of %d replicas: shards held again after %.1fs; then %d/%d Ready, %d with the "
                "same providerID, %d with exactly one Pod, %d extra Pods"
                % (
                    r["replicas"],
                    r["takeover"],
                    r["still_ready"],
                    r["count"],
                    r["same_ids"],
                    r["one_pod"],
                    r["extra_pods"],
                )
            )
    sharded, single = rows[0], rows[-1]
    print(
        "time to all Ready, %d replicas / 1: %.2fx"
        % (sharded["replicas"], sharded["ready_seconds"] / max(1e-9, single["ready_seconds"]))
    )


if __name__ == "__main__":
    main()
