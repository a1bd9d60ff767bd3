"""One identity (issue 37): out of cluster, the kubernetes provider acts as the controller's
``--kubeconfig``, never as ``$KUBECONFIG``.

A real controller starts with ``--kubeconfig`` of a ServiceAccount bound only by the controller's
shipped roles (not the kubernetes provider's) while ``$KUBECONFIG`` is the cluster admin's. Its
kubernetes Proxy must end Forbidden, an answer only the ServiceAccount gets, with no Pod made;
on main the Pod was made as the admin and the Proxy became Ready. The start line names the
kubeconfig the provider uses.
"""

from __future__ import annotations

import copy
import os

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from . import e2e_lib
from .e2e_lib import CONTROLLER_NS, GROUP, PLURAL, SA, VERSION, proxy_body, wait_proxy

pytestmark = [pytest.mark.squid]

controller_api = e2e_lib.controller_api
NARROW = "egress-proxies-narrow"


def _narrow_service_account(admin) -> None:
    """A ServiceAccount with the controller's own bindings but not the kubernetes provider's."""
    docs = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": NARROW, "namespace": CONTROLLER_NS},
        }
    ]
    for doc in e2e_lib._docs(os.path.join(e2e_lib.CONFIG, "rbac")):
        if doc["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(s.get("name") == SA for s in doc.get("subjects") or ()):
            continue
        doc = copy.deepcopy(doc)
        doc["metadata"]["name"] += "-narrow"
        doc["subjects"] = [{"kind": "ServiceAccount", "name": NARROW, "namespace": CONTROLLER_NS}]
        docs.append(doc)
    e2e_lib.apply_all(admin, docs)


def test_kubernetes_provider_acts_as_the_controllers_kubeconfig(
    controller_api, kube_cluster, kube_namespace, tmp_path, monkeypatch
):
    _narrow_service_account(controller_api)
    kubeconfig = e2e_lib.service_account_kubeconfig(
        controller_api, kube_cluster, str(tmp_path / "narrow.kubeconfig"), sa=NARROW
    )
    monkeypatch.setenv("KUBECONFIG", kube_cluster.kubeconfig)  # the admin, as on a user's laptop
    for variable in [v for v in os.environ if v.startswith("K8S_AUTH_")]:
        monkeypatch.delenv(variable)
    providers = {"installation": "id-" + kube_namespace, "providers": [{"name": "k8s", "type": "kubernetes"}]}
    controller = e2e_lib.ControllerProcess(
        str(tmp_path), kubeconfig, providers, kube_namespace, "lease-" + kube_namespace
    )
    custom = k8s.CustomObjectsApi(controller_api)
    controller.start(extra_args=["--probe-interval", "0"])
    try:
        controller.wait_ready()
        custom.create_namespaced_custom_object(
            GROUP, VERSION, kube_namespace, PLURAL, proxy_body("who", {"provider": "k8s"})
        )

        def settled(obj):
            if obj == "gone":
                return False
            ready = e2e_lib.condition(obj, "Ready")
            return ready.get("status") == "True" or ready.get("reason") in ("PermanentError", "ProviderError")

        obj = wait_proxy(custom, kube_namespace, "who", settled, "Ready or refused", 120, controller)
        ready = e2e_lib.condition(obj, "Ready")
        assert ready.get("status") == "False", "the Pod was made, as the admin: %s" % obj.get("status")
        assert "forbidden" in ready.get("message", "").lower(), ready
        assert NARROW in ready.get("message", ""), ready
        pods = k8s.CoreV1Api(controller_api).list_pod_for_all_namespaces(
            label_selector="app.kubernetes.io/managed-by"
        )
        assert not [p for p in pods.items if p.metadata.namespace == kube_namespace], "a Pod was made"
        log = controller.tail(400)
        assert (
            "provider k8s acts as the controller's own kubeconfig %s" % os.path.abspath(kubeconfig) in log
        ), log
        assert "token" not in log.split("acts as", 1)[-1].splitlines()[0]
    finally:
        rc = controller.stop()
        # Its delete is Forbidden too: the finalizer goes by hand, so the namespace can go.
        try:
            custom.patch_namespaced_custom_object(
                GROUP, VERSION, kube_namespace, PLURAL, "who", {"metadata": {"finalizers": None}}
            )
        except ApiException as exc:
            if exc.status != 404:  # never made: nothing to release
                raise
        assert rc == 0, controller.tail()
