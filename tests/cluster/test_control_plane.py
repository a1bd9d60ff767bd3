"""Smoke test of the test control plane itself: it is a real cluster. A Pod is scheduled and
becomes Running with an IP (scheduler + kwok), a Deployment rolls out (controller-manager), a
CRD's schema rejects an invalid object, and RBAC denies what was not granted."""

from __future__ import annotations

import ipaddress
import os

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cluster import kube_testlib

CRD_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "proxy-crd.yaml")


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
    with open(CRD_FILE, encoding="utf-8") as handle:
        crd = yaml.safe_load(handle)
    ext = k8s.ApiextensionsV1Api(kube_admin)
    try:
        ext.create_custom_resource_definition(crd)
    except ApiException as exc:
        assert exc.status == 409  # another test applied it already
    kube_testlib.wait_for(
        "CRD established",
        lambda: any(
            c.type == "Established" and c.status == "True"
            for c in ext.read_custom_resource_definition(crd["metadata"]["name"]).status.conditions or ()
        ),
    )
    custom = k8s.CustomObjectsApi(kube_admin)

    def create(name: str, spec: dict):
        return custom.create_namespaced_custom_object(
            "crawl.example.com",
            "v1alpha1",
            kube_namespace,
            "proxies",
            {
                "apiVersion": "crawl.example.com/v1alpha1",
                "kind": "Proxy",
                "metadata": {"name": name},
                "spec": spec,
            },
        )

    good = kube_testlib.wait_for(
        "Proxy accepted", lambda: create("good", {"provider": "local", "port": 3128})
    )
    assert good["metadata"]["uid"]
    for name, spec, field in (
        ("bad-port", {"provider": "local", "port": 70000}, "spec.port"),
        ("no-provider", {"port": 3128}, "spec.provider"),
        ("port-type", {"provider": "local", "port": "http"}, "spec.port"),
    ):
        with pytest.raises(ApiException) as caught:
            create(name, spec)
        assert caught.value.status == 422, caught.value.body
        assert field in caught.value.body


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
