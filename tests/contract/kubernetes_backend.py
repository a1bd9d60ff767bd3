"""The contract harness (``harness.Backend``) for the ``kubernetes`` provider, on the real test
control plane (tests/cluster): a kube-apiserver with RBAC, etcd, the scheduler, the
controller-manager and a kwok node that makes scheduled Pods Running with an IP.

Each harness gets its own namespace and its own ServiceAccount bound to exactly the
kubernetes-provider ClusterRole (controller/config/rbac/kubernetes-provider/), so the provider runs with the
rights a real installation grants, and ``break_listing`` can revoke them for real. Behind the
provider's back it uses the cluster-admin client.
"""

from __future__ import annotations

import contextlib
import random

import pytest
from cluster import kube_testlib
from fakes.not_found_server import BODIES, NotFoundServer, write_kubeconfig
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import (
    CreateRequest,
    Placement,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.ids import parse_id
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe

PROVIDER_NAME = "contract-k8s"  # deliberately not the type name
UNKNOWN_PHASE = "Hibernating"  # a phase Kubernetes does not define


class KubernetesBackend:
    reaches_running = True
    timeout = 30.0

    def __init__(self, cluster, admin: k8s.ApiClient, namespace: str, tmp_path):
        self.cluster = cluster
        self.admin = admin
        self.core = k8s.CoreV1Api(admin)
        self.namespace = namespace
        self.identity = kube_testlib.ProviderIdentity(
            admin, cluster.server, cluster.pki["ca_crt"], namespace, str(tmp_path)
        )
        self.installation = "ct-%08x" % random.SystemRandom().getrandbits(32)
        self.telemetry = observe.Telemetry()
        self.provider = self.build()
        self.malformed_ids = [
            "",
            "proxy-abcdefghijklmnop",  # no namespace
            namespace + "/",
            "/proxy-abcdefghijklmnop",
            namespace + "/proxy-x/extra",
            namespace + "//proxy-x",
            "Upper/proxy-x",
            namespace + "/Proxy-X",
            namespace + "/proxy x",
            " %s/proxy-x" % namespace,
            namespace + "/proxy-x\n",
            namespace + "/" + "a" * 64,
            "local/../etc/passwd",
            None,
        ]

    # -- construction --------------------------------------------------------------------

    def build(self, installation: str | None = None, telemetry=None, **block):
        block.setdefault("kubeconfig", self.identity.kubeconfig)
        parsed = config.parse(
            {
                "installation": installation or self.installation,
                "providers": [{"name": PROVIDER_NAME, "type": "kubernetes", "kubernetes": block}],
            }
        )
        chosen = self.telemetry if telemetry is None else telemetry
        return registry.build(parsed.providers[0], parsed.installation, chosen)

    def another_provider(self, installation: str | None = None):
        return self.build(installation=installation, telemetry=observe.Telemetry())

    @contextlib.contextmanager
    def unproven_backend(self, body: str):
        """The provider's kubeconfig pointed at a 404 server instead of the API server."""
        server = NotFoundServer(*BODIES[body])
        path = self.identity.kubeconfig + ".not-found"
        try:
            write_kubeconfig(path, server.endpoint)
            yield self.build(telemetry=observe.Telemetry(), kubeconfig=path)
        finally:
            server.close()

    def request(self, uid: str, cloud_init: str = "", **kw) -> CreateRequest:
        fields = {
            "name": names.name_from_uid(uid),
            "uid": uid,
            "namespace": self.namespace,
            "proxy_name": "",  # no Proxy object here, so no OwnerReference (tested separately)
            "placement": Placement(region="ignored", zone="ignored", machine_type="ignored", image="ignored"),
            "cloud_init": cloud_init,
            "port": 3128,
        }
        fields.update(kw)
        return CreateRequest(**fields)

    # -- behind the provider's back ------------------------------------------------------

    def pod(self, provider_id: str):
        namespace, name = parse_id(provider_id)
        return self.core.read_namespaced_pod(name, namespace)

    def create_unmarked(self, name: str) -> None:
        """A Pod with our installation and a UID label, but without the managed mark."""
        self.core.create_namespaced_pod(
            self.namespace,
            {
                "metadata": {
                    "name": name,
                    "labels": {names.LABEL_UID: "unmarked-" + name, names.LABEL_INSTALL: self.installation},
                },
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        )

    def force_unknown_state(self, provider_id: str) -> None:
        """Write a phase Kubernetes does not define into the Pod's status (as a broken or newer
        kubelet could); no kwok stage matches it, so it stays."""
        namespace, name = parse_id(provider_id)
        self.core.patch_namespaced_pod_status(name, namespace, {"status": {"phase": UNKNOWN_PHASE}})
        assert self.pod(provider_id).status.phase == UNKNOWN_PHASE

    def backend_record(self, provider_id: str) -> dict:
        pod = self.pod(provider_id)
        return {
            "uid": (pod.metadata.labels or {}).get(names.LABEL_UID, ""),
            "created_at": pod.metadata.creation_timestamp,
        }

    @contextlib.contextmanager
    def break_listing(self):
        """Revoke the provider identity's ClusterRoleBinding: its cluster-wide list is forbidden."""
        self.identity.unbind()
        try:
            yield
        finally:
            self.identity.bind()

    def leftovers(self, provider_id: str) -> list:
        namespace, name = parse_id(provider_id)
        found = []
        for kind, read in (
            ("pod", self.core.read_namespaced_pod),
            ("configmap", self.core.read_namespaced_config_map),
            ("secret", self.core.read_namespaced_secret),
        ):
            try:
                read(name, namespace)
                found.append("%s %s/%s" % (kind, namespace, name))
            except ApiException as exc:
                if exc.status != 404:
                    raise
        return found

    def captured_output(self) -> str:
        """Every Pod, ConfigMap and Secret of the namespace as the API server stores them, and
        the API server's log."""
        pods = self.core.list_namespaced_pod(self.namespace)
        maps = self.core.list_namespaced_config_map(self.namespace)
        secrets = self.core.list_namespaced_secret(self.namespace)
        dumped = [str(self.admin.sanitize_for_serialization(x)) for x in (pods, maps, secrets)]
        return "\n".join(dumped) + "\n" + self.cluster.tail("kube-apiserver", 100000)

    def teardown(self) -> None:
        self.provider.close()
        self.identity.close()


@pytest.fixture(name="backend")
def kubernetes_backend(kube_cluster, kube_admin, kube_namespace, tmp_path):
    """A harness on the real test API server with its own provider identity, closed at teardown."""
    harness = KubernetesBackend(kube_cluster, kube_admin, kube_namespace, tmp_path)
    try:
        yield harness
    finally:
        harness.teardown()
