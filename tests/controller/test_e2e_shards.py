"""Sharding across replicas on Leases: 3 controller processes with ``--shards 3`` on the real test
API server, Proxies on the kubernetes provider (Pods that kwok brings to Running).

Every Proxy becomes Ready and its shard's Lease is held by exactly one live replica; then one
replica is SIGKILLed: within the lease duration (plus a settle) its shards are held by the
others, every Proxy stays Ready with the same providerID, there is exactly one Pod per Proxy
(none duplicated, none leaked), and a Proxy of the killed replica's shards is still reconciled
(deleted: its Pod goes and the Proxy is released).
"""

from __future__ import annotations

import collections
import concurrent.futures
import time

import pytest
from cluster import kube_testlib
from egress_proxies_controller.sharding import assignment as shards
from kubernetes import client as k8s

from . import e2e_lib, monitoring_lib, shard_lib
from .e2e_lib import GROUP, PLURAL, VERSION, proxy_body

pytestmark = [pytest.mark.squid]
controller_api = e2e_lib.controller_api
COUNT, SHARDS, REPLICAS = 45, 3, 3
# Longer than the defaults (15/10/2 s): three replicas' ansible runs on two cores shared with other
# work can starve renewals for over 10 s, and a replica that misses its renew deadline exits (as
# it must, and as a single leader would).
LEASE_DURATION = 30
TIMING = ["--lease-duration", str(LEASE_DURATION), "--renew-deadline", "20", "--retry-period", "2"]
# kwok Pods run no Squid: with the proxy health engine off, Ready means Running.
ARGS = [
    "--shards",
    str(SHARDS),
    "--probe-interval",
    "0",
    "--provisioning-poll",
    "2",
    "--running-poll",
    "20",
    *TIMING,
]


class ReplicaExited(AssertionError):
    pass


def _wait(what: str, probe, timeout: float, procs, interval: float = 1.0):
    """Poll ``probe`` until truthy; fail at once, with its log, when a replica exited."""

    def checked():
        for proc in procs:
            if proc.proc.poll() is not None:
                raise ReplicaExited(
                    "%s: a replica exited %s:\n%s" % (what, proc.proc.returncode, proc.tail())
                )
        return probe()

    return kube_testlib.wait_for(what, checked, timeout, interval, fatal=ReplicaExited)


def test_three_replicas_split_the_shards_and_take_over_a_killed_one(
    controller_api, kube_cluster, kube_namespace, tmp_path
):
    admin, namespace = controller_api, kube_namespace
    custom = k8s.CustomObjectsApi(admin)
    kubeconfig = e2e_lib.service_account_kubeconfig(admin, kube_cluster, str(tmp_path / "sa.kubeconfig"))
    providers = {
        "installation": "shards-%s" % namespace,
        "providers": [
            {
                "name": "k8s",
                "type": "kubernetes",
                "kubernetes": {
                    "kubeconfig": kubeconfig,
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                },
            }
        ],
    }
    lease_id = "shards-" + namespace
    procs = []
    for i in range(REPLICAS):
        workdir = tmp_path / ("replica-%d" % i)
        workdir.mkdir()
        procs.append(e2e_lib.ControllerProcess(str(workdir), kubeconfig, providers, namespace, lease_id))
    started = time.monotonic()
    try:
        for proc in procs:
            proc.start(extra_args=ARGS)
        for proc in procs:
            proc.wait_ready(timeout=90)
        identities = {shard_lib.identity(p): p for p in procs}
        holders = shard_lib.shard_holders(admin, lease_id)
        assert sorted(holders) == list(range(SHARDS)) and set(holders.values()) == set(identities), holders

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda i: custom.create_namespaced_custom_object(
                        GROUP, VERSION, namespace, PLURAL, proxy_body("p%03d" % i, {"provider": "k8s"})
                    ),
                    range(COUNT),
                )
            )

        def all_ready():
            items = e2e_lib.proxies(custom, namespace)
            return items if len(items) == COUNT and all(e2e_lib.is_ready(o) for o in items) else None

        items = _wait("%d Proxies Ready" % COUNT, all_ready, 900, procs, interval=2)
        ready_at = time.monotonic() - started
        before = {o["metadata"]["uid"]: o["status"]["providerID"] for o in items}
        names = {o["metadata"]["uid"]: o["metadata"]["name"] for o in items}
        holders = shard_lib.shard_holders(admin, lease_id)
        per_replica = collections.Counter(holders[shards.shard_of(uid, SHARDS)] for uid in before)
        assert set(per_replica) <= set(identities) and sum(per_replica.values()) == COUNT, per_replica
        pods = shard_lib.pods_by_uid(admin, namespace)
        assert {uid: len(p) for uid, p in pods.items()} == dict.fromkeys(before, 1)

        # Each replica reconciled only its own shard's Proxies: the metrics say how many it held.
        checked = 0
        for identity, proc in identities.items():
            held = [s for s, h in holders.items() if h == identity]
            text = proc.metrics()
            for shard in held:
                assert 'egress_proxies_shard_held{shard="%d"} 1.0' % shard in text
            if held:  # the shipped dashboard's and alerts' shard expressions name only what it exports
                checked += monitoring_lib.check_scrape(text, "shards")
        assert checked

        victim_identity = holders[0]
        victim = identities[victim_identity]
        lost = {s for s, h in holders.items() if h == victim_identity}
        survivors = [p for p in procs if p is not victim]
        victim.kill()
        killed_at = time.monotonic()

        def taken_over():
            now = shard_lib.shard_holders(admin, lease_id)
            live = {shard_lib.identity(p) for p in survivors}
            return now if all(now.get(s) in live for s in range(SHARDS)) else None

        after = kube_testlib.wait_for(
            "shards of the killed replica taken over",
            taken_over,
            timeout=3 * LEASE_DURATION + 10,
            interval=0.5,
        )
        takeover_seconds = time.monotonic() - killed_at
        assert {after[s] for s in lost} <= {shard_lib.identity(p) for p in survivors}
        for proc in survivors:
            proc.wait_ready(timeout=30)

        e2e_lib.settle(LEASE_DURATION)  # a survivor that took a shard has polled its Proxies
        items = e2e_lib.proxies(custom, namespace)
        assert all(e2e_lib.is_ready(o) for o in items), [
            o["metadata"]["name"] for o in items if not e2e_lib.is_ready(o)
        ]
        assert {o["metadata"]["uid"]: o["status"]["providerID"] for o in items} == before
        pods = shard_lib.pods_by_uid(admin, namespace)
        assert {uid: len(p) for uid, p in pods.items()} == dict.fromkeys(before, 1)
        assert {uid: p[0] for uid, p in pods.items()} == before

        # A Proxy of a shard the killed replica held is still reconciled: deleted, its Pod goes.
        orphaned_uid = next(uid for uid in sorted(before) if shards.shard_of(uid, SHARDS) in lost)
        name = names[orphaned_uid]
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        e2e_lib.wait_proxy(custom, namespace, name, lambda o: o == "gone", "%s deleted" % name, 300)
        _wait(
            "its Pod deleted",
            lambda: orphaned_uid not in shard_lib.pods_by_uid(admin, namespace),
            120,
            survivors,
        )
        print(
            "\nshards e2e: %d Proxies Ready after %.0fs on %d replicas %s; "
            "shards taken over %.1fs after SIGKILL"
            % (COUNT, ready_at, REPLICAS, dict(per_replica), takeover_seconds)
        )

        # Clean up through the survivors (their finalizers): every Proxy released, no Pod left.
        items = e2e_lib.proxies(custom, namespace)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda o: custom.delete_namespaced_custom_object(
                        GROUP, VERSION, namespace, PLURAL, o["metadata"]["name"]
                    ),
                    items,
                )
            )
        kube_testlib.wait_for(
            "every Proxy released", lambda: not e2e_lib.proxies(custom, namespace), timeout=600, interval=2
        )
        assert shard_lib.pods_by_uid(admin, namespace) == {}
        for proc in survivors:
            assert proc.stop() == 0, proc.tail()
    finally:
        for proc in procs:
            if proc.proc is not None and proc.proc.poll() is None:
                proc.kill()
