"""The ProxyPool end-to-end harness: the E2E environment of test_e2e (real API server, real
controller process under the shipped RBAC, local providers with real Squid) with a second local
provider, and the reads the pool tests make (members, the endpoints Secret, the EndpointSlice)."""

from __future__ import annotations

import base64
import json

from cluster import kube_testlib
from contract.local_backend import random_loopback_range
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from .e2e_lib import GROUP, PLURAL, VERSION, condition
from .test_e2e import E2E, _kill_squids

POOLS = "proxypools"
POOL_LABEL = "crawl.example.com/pool"


class PoolE2E(E2E):
    def __init__(self, admin, cluster, namespace, tmp_path):
        super().__init__(admin, cluster, namespace, tmp_path)
        self.second_dir = self.state_dir + "-second"
        self.providers["providers"] = [p for p in self.providers["providers"] if p["type"] == "local"]
        self.providers["providers"].append(
            {
                "name": "second",
                "type": "local",
                "local": {"stateDir": self.second_dir, "addressRange": random_loopback_range()},
            }
        )
        self.controller.write_providers(self.providers)

    def create_pool(self, name: str, spec: dict) -> dict:
        body = {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "ProxyPool", "metadata": {"name": name}}
        return self.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, POOLS, dict(body, spec=spec)
        )

    def pool(self, name: str) -> dict | None:
        try:
            return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, POOLS, name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def scale(self, name: str, replicas: int) -> dict:
        return self.custom.patch_namespaced_custom_object_scale(
            GROUP, VERSION, self.namespace, POOLS, name, {"spec": {"replicas": replicas}}
        )

    def members(self, name: str) -> list:
        return self.custom.list_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, label_selector="%s=%s" % (POOL_LABEL, name)
        )["items"]

    def ready_members(self, name: str) -> list:
        return [
            m
            for m in self.members(name)
            if not m["metadata"].get("deletionTimestamp") and condition(m, "Ready").get("status") == "True"
        ]

    def endpoints(self, name: str) -> tuple:
        """(proxies.txt lines, proxies.json entries) of the pool's endpoints Secret."""
        try:
            secret = k8s.CoreV1Api(self.admin).read_namespaced_secret(name + "-endpoints", self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return [], []
            raise
        data = {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
        return data.get("proxies.txt", "").splitlines(), json.loads(data.get("proxies.json") or "[]")

    def slice_addresses(self, name: str) -> list | None:
        """The addresses of the pool's EndpointSlice (None when there is none)."""
        try:
            es = k8s.DiscoveryV1Api(self.admin).read_namespaced_endpoint_slice(name, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return sorted(a for e in es.endpoints or [] for a in e.addresses)

    def wait_pool(self, name: str, predicate, what: str, timeout: float = 120):
        def probe():
            if self.controller.proc.poll() is not None:
                raise AssertionError("controller exited:\n" + self.controller.tail())
            obj = self.pool(name)
            return obj if obj is not None and predicate(obj) else None

        try:
            return kube_testlib.wait_for(what, probe, timeout=timeout, interval=0.5)
        except Exception as exc:
            raise AssertionError(
                "%s\n--- pool ---\n%s\n--- members ---\n%s\n--- controller log ---\n%s"
                % (exc, json.dumps(self.pool(name), indent=1), self.describe(name), self.pool_log())
            ) from None

    def pool_log(self) -> str:
        """The pool reconciler's lines of the controller log, and its last lines."""
        lines = self.controller.tail(100000).splitlines()
        mine = [line for line in lines if "controller.pool" in line or "Traceback" in line]
        return "\n".join([*mine[-40:], "...", *lines[-15:]])

    def describe(self, name: str) -> str:
        """One line per member: name, target, provider, Ready, deleting (for failure messages)."""
        return "\n".join(
            "%s target=%s provider=%s ready=%s deleting=%s"
            % (
                m["metadata"]["name"],
                m["metadata"]["labels"].get("crawl.example.com/pool-target"),
                (m.get("status") or {}).get("provider"),
                condition(m, "Ready").get("status"),
                bool(m["metadata"].get("deletionTimestamp")),
            )
            for m in self.members(name)
        )

    def wait_settled(self, name: str, replicas: int, timeout: float = 150) -> dict:
        """The pool Ready with exactly ``replicas`` members, all Ready, the Secret listing them."""

        def settled(obj):
            status = obj.get("status") or {}
            return (
                status.get("observedGeneration") == obj["metadata"]["generation"]
                and status.get("readyReplicas") == replicas
                and status.get("replicas") == replicas
                and condition(obj, "Ready").get("status") == "True"
                and condition(obj, "Progressing").get("status") == "False"
                and len(self.members(name)) == replicas
                and len(self.endpoints(name)[0]) == replicas
            )

        return self.wait_pool(name, settled, "pool %s settled at %d" % (name, replicas), timeout)

    def delete_pool(self, name: str) -> None:
        try:
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, POOLS, name)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def cleanup(self) -> None:
        try:
            if self.controller.proc is not None and self.controller.proc.poll() is None:
                self.controller.write_providers(self.providers)  # a test may have taken one out
                for item in self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, POOLS)[
                    "items"
                ]:
                    self.delete_pool(item["metadata"]["name"])
                kube_testlib.wait_for(
                    "pools gone",
                    lambda: (
                        not self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, POOLS)[
                            "items"
                        ]
                    ),
                    timeout=90,
                )
            super().cleanup()
            assert self.instances(self.second_dir) == [], "instances left behind in %s" % self.second_dir
        finally:
            _kill_squids(self.second_dir)
