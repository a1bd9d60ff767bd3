"""Smoke test of the test control plane itself: it is a real cluster. A Pod is scheduled and
becomes Running with an IP (scheduler + kwok), a Deployment rolls out (controller-manager), a
CRD's schema rejects an invalid object, and RBAC denies what was not granted."""

from __future__ import annotations

import ipaddress

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cluster import kube_testlib


def pause_pod(name: str) -> dict:
    return {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }


def test_pod_is_scheduled_and_runs_with_an_ip(kube_cluster, kube_admin, kube_namespace):
    core = k8s.CoreV1Api(kube_admin)
    core.create_namespaced_pod(kube_namespace, pause_pod("smoke"))

    def running():
        pod = core.read_namespaced_pod("smoke", kube_namespace)
        return pod if pod.status.phase == "Running" and pod.status.pod_ip else None

    pod = kube_testlib.wait_for("Pod running", running)
    assert pod.spec.node_name == "kwok-node-0"
    assert ipaddress.ip_address(pod.status.pod_ip) in ipaddress.ip_network(kube_cluster.pod_cidr)
    ready = [c for c in pod.status.conditions if c.type == "Ready"]
    assert ready and ready[0].status == "True"


def test_deployment_rolls_out(kube_admin, kube_namespace):
    apps = k8s.AppsV1Api(kube_admin)
    template = pause_pod("web")
    apps.create_namespaced_deployment(
        kube_namespace,
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": template["metadata"], "spec": template["spec"]},
            },
        },
    )

    def available():
        dep = apps.read_namespaced_deployment("web", kube_namespace)
        return dep if (dep.status.available_replicas or 0) == 2 else None

    dep = kube_testlib.wait_for("Deployment available", available, timeout=60)
    assert dep.status.ready_replicas == 2
    pods = k8s.CoreV1Api(kube_admin).list_namespaced_pod(kube_namespace, label_selector="app=web").items
    assert len(pods) == 2 and all(p.status.pod_ip for p in pods)


def test_crd_schema_rejects_invalid_objects(kube_admin, kube_namespace):
    # The controller's real Proxy CRD: structural schema, defaults and a CEL rule.
    kube_testlib.apply_proxy_crd(kube_admin)
    good = kube_testlib.wait_for(
        "Proxy accepted",
        lambda: kube_testlib.create_proxy(kube_admin, kube_namespace, "good", {"provider": "local"}),
    )
    assert good["metadata"]["uid"]
    assert good["spec"]["port"] == 3128  # the schema's default, applied by the API server
    both = {"inline": "#cloud-config\n", "secretRef": {"name": "s", "key": "k"}}
    for name, spec, expected in (
        ("bad-port", {"provider": "local", "port": 70000}, "spec.port"),
        ("no-provider", {"port": 3128}, "spec.provider"),
        ("port-type", {"provider": "local", "port": "http"}, "spec.port"),
        ("bad-name", {"provider": "Not_A_Label"}, "spec.provider"),
        ("both-sources", {"provider": "local", "cloudInit": both}, "set exactly one of inline or secretRef"),
    ):
        with pytest.raises(ApiException) as caught:
            kube_testlib.create_proxy(kube_admin, kube_namespace, name, spec)
        assert caught.value.status == 422, caught.value.body
        assert expected in caught.value.body, caught.value.body


def test_rbac_denies_what_was_not_granted(kube_cluster, kube_admin, kube_namespace, tmp_path):
    core = k8s.CoreV1Api(kube_admin)
    core.create_namespaced_service_account(kube_namespace, {"metadata": {"name": "nobody"}})
    token = core.create_namespaced_service_account_token("nobody", kube_namespace, {"spec": {}}).status.token
    configuration = k8s.Configuration()
    configuration.host = kube_cluster.server
    configuration.ssl_ca_cert = kube_cluster.pki["ca_crt"]
    configuration.api_key = {"authorization": "Bearer " + token}
    with k8s.ApiClient(configuration) as nobody:
        with pytest.raises(ApiException) as caught:
            k8s.CoreV1Api(nobody).list_namespaced_pod(kube_namespace)
        assert caught.value.status == 403
        assert "system:serviceaccount:%s:nobody" % kube_namespace in caught.value.body
        # The token itself is valid (signed with the generated key): the server knows who we are.
        review = k8s.AuthenticationV1Api(nobody).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
        assert review.status.user_info.username == "system:serviceaccount:%s:nobody" % kube_namespace
