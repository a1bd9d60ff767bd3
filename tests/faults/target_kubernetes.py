"""The kubernetes provider behind a Toxiproxy link to the real kube-apiserver (TLS passes
through the link untouched: its certificate names 127.0.0.1); counts read with the
cluster-admin client."""

from __future__ import annotations

import os

import yaml
from contract.kubernetes_backend import KubernetesBackend
from kubernetes import client as k8s

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from faults.target import Target


class KubernetesTarget(Target):
    column = "kubernetes"

    def __init__(self, toxiproxy, tag: str, cluster, admin, namespace: str, tmp_path):
        backend = KubernetesBackend(cluster, admin, namespace, tmp_path)
        upstream = cluster.server.split("//", 1)[1]
        self.tmp_path = tmp_path
        super().__init__(backend, toxiproxy.create("k8s-" + tag, upstream))

    def build_faulted(self):
        with open(self.backend.identity.kubeconfig, encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        for cluster in config["clusters"]:
            cluster["cluster"]["server"] = "https://" + self.link.listen
        path = os.path.join(str(self.tmp_path), "through-toxiproxy.kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle)
        return self.backend.build(telemetry=self.telemetry, kubeconfig=path)

    def providers_entry(self) -> dict:
        block = {"kubeconfig": self.backend.identity.kubeconfig}
        return {"name": self.direct.name, "type": "kubernetes", "kubernetes": block}

    def records(self) -> list:
        core = k8s.CoreV1Api(self.backend.admin)
        found = []
        for pod in core.list_namespaced_pod(self.backend.namespace).items:
            marks = pod.metadata.labels or {}
            found.append(
                (pod.metadata.name, marks.get(names.LABEL_UID, ""), marks.get(names.LABEL_INSTALL, ""))
            )
        return found

    def close(self) -> None:
        super().close()
        self.backend.teardown()
