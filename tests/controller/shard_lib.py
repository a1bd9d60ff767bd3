"""What the shards e2e and bench/controller_shards.py read from the cluster: who holds each
shard's Lease, the Pods per Proxy UID (counted on the API server itself), a replica's identity."""

from __future__ import annotations

import collections
import os

from kubernetes import client as k8s

from . import e2e_lib


def shard_holders(admin, lease_id: str) -> dict:
    """{shard: holder identity} from the shard Leases of ``lease_id``."""
    leases = k8s.CoordinationV1Api(admin).list_namespaced_lease(e2e_lib.CONTROLLER_NS).items
    out = {}
    for lease in leases:
        name = lease.metadata.name
        if name.startswith(lease_id + "-shard-"):
            out[int(name.rsplit("-", 1)[1])] = lease.spec.holder_identity or ""
    return out


def pods_by_uid(admin, namespace: str) -> dict:
    """{Proxy UID: ["ns/pod", ...]} of the managed Pods not being deleted."""
    pods = k8s.CoreV1Api(admin).list_namespaced_pod(namespace, label_selector="proxy-operator-managed=true")
    out = collections.defaultdict(list)
    for pod in pods.items:
        if pod.metadata.deletion_timestamp is None:
            out[pod.metadata.labels["proxy-operator-uid"]].append("%s/%s" % (namespace, pod.metadata.name))
    return out


def identity(proc) -> str:
    """The identity a controller process holds Leases under (its host name and pid)."""
    return "%s_%d" % (os.uname().nodename, proc.proc.pid)
