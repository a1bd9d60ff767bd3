"""The floor under a burst of N Proxies to Ready: the same API writes and provider calls the
controller makes, from a plain client, with no controller and no ansible (issue 30).

Per Proxy, as the controller does it: the Proxy created (8 at a time, as ``create_proxies``),
our finalizer patched on, its Pod created by the shipped kubernetes provider (module_utils, in
this process: the same Pod body and API calls as the module's), the status written
(Provisioning), the Pod read every second until Running, the status written again (Ready) and a
``Ready`` Event. ``--floor-threads`` Proxies are worked on at once. The seconds from the first
create to the last Ready are the floor: what the API server and kwok take for these requests
with nothing of ours in between; the controller's seconds over them say how much of a burst is
ours. Each Proxy's Ready is its Ready=True status write, seen through the same watch as the
controller's (bench/ready_watch.py), so the per-Proxy waits compare too. Used by
controller_scale.py as its ``floor`` mode (same plane, same namespace shape).
"""

from __future__ import annotations

import concurrent.futures
import os
import resource
import time

from cluster import kube_testlib
from controller_scale import burst_figures, create_proxies, kwok_providers, wait_all
from egress_proxies_controller import api
from kubernetes import client as k8s
from ready_watch import ReadyWatch

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.names import name_from_uid
from controller import e2e_lib

GROUP, VERSION, PLURAL = "crawl.example.com", "v1alpha1", "proxies"


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _condition(kind: str, status: bool, reason: str, message: str = "") -> dict:
    return {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "observedGeneration": 1,
        "lastTransitionTime": _stamp(),
    }


class Floor:
    def __init__(self, admin, provider, namespace: str):
        self.custom, self.core = k8s.CustomObjectsApi(admin), k8s.CoreV1Api(admin)
        self.provider, self.namespace = provider, namespace

    def _status(self, name: str, status: dict) -> None:
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, self.namespace, PLURAL, name, {"status": status}
        )

    def one(self, obj: dict) -> str:
        """One Proxy to Ready; returns its instance's provider id."""
        meta = obj["metadata"]
        name, uid = meta["name"], meta["uid"]
        self.custom.patch_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name, {"metadata": {"finalizers": [api.FINALIZER]}}
        )
        request = contract.CreateRequest(
            name=name_from_uid(uid), uid=uid, namespace=self.namespace, proxy_name=name, owner_reference=True
        )
        provider_id = self.provider.create(request, Deadline(120))
        self._status(
            name,
            {
                "providerID": provider_id,
                "provider": "k8s",
                "state": "Provisioning",
                "conditions": [_condition("Ready", False, "Provisioning", "the instance is starting")],
            },
        )
        while True:
            instance = self.provider.get(provider_id, Deadline(60))
            if instance.state == "Running":
                break
            time.sleep(1.0)
        message = "proxy is running at %s" % instance.ip
        self._status(
            name,
            {
                "providerID": provider_id,
                "provider": "k8s",
                "state": "Running",
                "ip": instance.ip,
                "observedGeneration": 1,
                "conditions": [_condition("Ready", True, "Running", message)],
            },
        )
        self.core.create_namespaced_event(
            self.namespace,
            {
                "metadata": {"generateName": name + "."},
                "involvedObject": {
                    "apiVersion": "%s/%s" % (GROUP, VERSION),
                    "kind": "Proxy",
                    "name": name,
                    "namespace": self.namespace,
                    "uid": uid,
                },
                "reason": "Ready",
                "message": message,
                "type": "Normal",
                "source": {"component": "burst-floor"},
                "firstTimestamp": _stamp(),
                "lastTimestamp": _stamp(),
                "count": 1,
            },
        )
        return provider_id

    def clean(self, provider_ids: list) -> None:
        for provider_id in provider_ids:
            self.provider.delete(provider_id, Deadline(60))
        for obj in self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL)["items"]:
            name = obj["metadata"]["name"]
            self.custom.patch_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, name, {"metadata": {"finalizers": []}}
            )
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)


def run(admin, plane, workdir: str, count: int, budget: float, threads: int = 16) -> dict:
    """The floor for ``count`` Proxies, as a controller_scale row (mode ``floor``)."""
    namespace = kube_testlib.create_namespace(admin, prefix="floor")
    kubeconfig = e2e_lib.service_account_kubeconfig(
        admin, plane, os.path.join(workdir, "sa-%s.kubeconfig" % namespace)
    )
    parsed = providers_file.parse(kwok_providers(kubeconfig, "bench-floor"))
    provider = registry.build(parsed.find("k8s"), parsed.installation)
    floor = Floor(admin, provider, namespace)
    readiness = ReadyWatch(floor.custom, namespace)
    cpu = time.process_time()
    started = time.monotonic()
    created = create_proxies(floor.custom, namespace, count, "p%04d")
    items = floor.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(floor.one, obj) for obj in items]
        elapsed = wait_all(readiness, started, count, budget, "floor N=%d" % count)
        concurrent.futures.wait(futures, timeout=max(0.0, budget - elapsed))
    readiness.stop()
    cpu = time.process_time() - cpu
    ids = [f.result() for f in futures if f.done() and f.exception() is None]
    floor.clean(ids)
    kube_testlib.delete_namespace(admin, namespace)
    return {
        "mode": "floor",
        "count": count,
        **burst_figures(started, created, readiness.snapshot(), count, elapsed),
        "cpu": cpu,
        "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "runs": 0,
        "breakdown": "a plain client, %d Proxies at once, no controller, no ansible" % threads,
    }
