"""The controller role through kubernetes.core.k8s on the test API server, in the three modes a
user runs it: applied, ``--check --diff`` (a server-side dry run: the diff names the new image,
the server keeps the old one) and ``--diff`` (the change is stored and shown). The molecule
scenario (test_molecule.py) covers the fresh install, idempotence and the objects' content.
"""

from __future__ import annotations

import pytest
from cluster import kube_testlib
from integration.playbook import run_playbook
from kubernetes import client as k8s

pytestmark = [pytest.mark.playbook]

NAMESPACE = "egress-proxies-system"
DEPLOYMENT = "egress-proxies-controller"
DEPLOY_TASK = "Apply the Deployment and wait for its rollout"


def _role(kubeconfig: str, image: str) -> list:
    return [
        {
            "name": "Deploy the controller",
            "ansible.builtin.include_role": {"name": "crawl.egress_proxies.controller"},
            "vars": {
                "controller_kubeconfig": kubeconfig,
                "controller_image": image,
                "controller_providers": {
                    "installation": "role-test",
                    "providers": [
                        {"name": "local", "type": "local", "local": {"addressRange": "127.89.0.0/24"}}
                    ],
                },
                "controller_wait_timeout": 120,
            },
        }
    ]


def _task(run, name: str) -> dict:
    (key,) = [k for k in run.tasks if k.endswith(" : " + name) or k == name]
    return run.tasks[key]


def _image(diff_side: dict) -> str:
    return diff_side["spec"]["template"]["spec"]["containers"][0]["image"]


def _live_image(api) -> str:
    deployment = k8s.AppsV1Api(api).read_namespaced_deployment(DEPLOYMENT, NAMESPACE)
    return deployment.spec.template.spec.containers[0].image


@pytest.fixture
def cluster_client(kube_cluster):
    api = kube_testlib.api_client(kube_cluster.kubeconfig)
    try:
        yield api
    finally:
        # The workload only: the CRDs, namespace and RBAC are shared with the session's other tests.
        for delete in (
            lambda: k8s.AppsV1Api(api).delete_namespaced_deployment(DEPLOYMENT, NAMESPACE),
            lambda: k8s.CoreV1Api(api).delete_namespaced_config_map("egress-proxies-providers", NAMESPACE),
            lambda: k8s.CoreV1Api(api).delete_namespaced_service(
                "egress-proxies-controller-metrics", NAMESPACE
            ),
        ):
            try:
                delete()
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise
        api.close()


def test_the_role_applies_then_check_diff_shows_the_change_without_making_it(
    kube_cluster, cluster_client, tmp_path
):
    first = run_playbook(
        tmp_path, _role(kube_cluster.kubeconfig, "registry.example/egress-proxies-controller:a")
    )
    assert first.rc == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert _live_image(cluster_client) == "registry.example/egress-proxies-controller:a"

    check = run_playbook(
        tmp_path,
        _role(kube_cluster.kubeconfig, "registry.example/egress-proxies-controller:b"),
        check=True,
        diff=True,
    )
    assert check.rc == 0, check.stdout[-4000:] + check.stderr[-2000:]
    deploy = _task(check, DEPLOY_TASK)
    assert deploy["changed"] is True
    assert _image(deploy["diff"]["before"]) == "registry.example/egress-proxies-controller:a"
    assert _image(deploy["diff"]["after"]) == "registry.example/egress-proxies-controller:b"
    # Unchanged objects report no change even in check mode (server-side dry run, not a guess).
    assert _task(check, "Apply the CRDs and wait until they are Established")["changed"] is False
    assert _live_image(cluster_client) == "registry.example/egress-proxies-controller:a"

    applied = run_playbook(
        tmp_path, _role(kube_cluster.kubeconfig, "registry.example/egress-proxies-controller:b"), diff=True
    )
    assert applied.rc == 0, applied.stdout[-4000:] + applied.stderr[-2000:]
    deploy = _task(applied, DEPLOY_TASK)
    assert deploy["changed"] is True
    assert _image(deploy["diff"]["after"]) == "registry.example/egress-proxies-controller:b"
    assert _live_image(cluster_client) == "registry.example/egress-proxies-controller:b"
    assert deploy["result"]["status"]["updatedReplicas"] == 1  # the rollout was waited for
