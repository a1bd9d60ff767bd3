"""The aggregated user roles on the real test API server: the shipped ClusterRoles
egress-proxies-proxies-viewer and -editor (controller/config/rbac/, labels
``rbac.authorization.k8s.io/aggregate-to-view`` and ``aggregate-to-edit``) are folded into
Kubernetes' built-in ``view`` and ``edit`` by the controller-manager's aggregation controller, so a
user bound to ``view`` in a namespace lists and reads its Proxies and ProxyPools but may not
create, change or delete them, nor write their status, and a user bound to ``edit`` may do all
of that except write the status (the controller's).
"""

from __future__ import annotations

import pytest
from cluster import kube_testlib
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from . import e2e_lib
from .e2e_lib import GROUP, VERSION, proxy_body

controller_api = e2e_lib.controller_api

ROLES = {"viewer-user": "view", "editor-user": "edit"}


def as_user(admin: k8s.ApiClient, user: str) -> k8s.CustomObjectsApi:
    """The admin's connection, impersonating ``user`` (the API server authorises as that user)."""
    impersonating = k8s.ApiClient(admin.configuration)
    impersonating.set_default_header("Impersonate-User", user)
    return k8s.CustomObjectsApi(impersonating)


def refused(call) -> bool:
    try:
        call()
    except ApiException as exc:
        if exc.status == 403:
            return True
        raise
    return False


@pytest.fixture
def users(controller_api, kube_namespace):
    rbac = k8s.RbacAuthorizationV1Api(controller_api)
    for user, role in ROLES.items():
        rbac.create_namespaced_role_binding(
            kube_namespace,
            {
                "metadata": {"name": user},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            },
        )

    def aggregated(role: str, plural: str, verb: str) -> bool:  # the aggregation is asynchronous
        rules = rbac.read_cluster_role(role).rules or []
        return any(
            GROUP in (r.api_groups or []) and plural in (r.resources or []) and verb in (r.verbs or [])
            for r in rules
        )

    for plural in ("proxies", "proxypools"):
        kube_testlib.wait_for(
            "view aggregates %s" % plural, lambda p=plural: aggregated("view", p, "list"), 60
        )
        kube_testlib.wait_for(
            "edit aggregates %s" % plural, lambda p=plural: aggregated("edit", p, "create"), 60
        )
    return {user: as_user(controller_api, user) for user in ROLES}


def test_view_reads_proxies_and_edit_writes_them(users, kube_namespace):
    viewer, editor = users["viewer-user"], users["editor-user"]
    ns = kube_namespace
    body = proxy_body("by-editor", {"provider": "local"})
    assert refused(lambda: viewer.create_namespaced_custom_object(GROUP, VERSION, ns, "proxies", body))
    editor.create_namespaced_custom_object(GROUP, VERSION, ns, "proxies", body)
    names = [
        o["metadata"]["name"]
        for o in viewer.list_namespaced_custom_object(GROUP, VERSION, ns, "proxies")["items"]
    ]
    assert names == ["by-editor"]
    assert (
        viewer.get_namespaced_custom_object(GROUP, VERSION, ns, "proxies", "by-editor")["spec"]["provider"]
        == "local"
    )
    assert viewer.get_namespaced_custom_object_status(GROUP, VERSION, ns, "proxies", "by-editor")
    patch = {"spec": {"port": 3130}}
    assert refused(
        lambda: viewer.patch_namespaced_custom_object(GROUP, VERSION, ns, "proxies", "by-editor", patch)
    )
    editor.patch_namespaced_custom_object(GROUP, VERSION, ns, "proxies", "by-editor", patch)
    status = {"status": {"state": "Running"}}
    for user in (viewer, editor):  # status is the controller's
        assert refused(
            lambda u=user: u.patch_namespaced_custom_object_status(
                GROUP, VERSION, ns, "proxies", "by-editor", status
            )
        )
    pool = {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "ProxyPool",
        "metadata": {"name": "pool"},
        "spec": {"replicas": 0, "template": {"provider": "local"}},
    }
    assert refused(lambda: viewer.create_namespaced_custom_object(GROUP, VERSION, ns, "proxypools", pool))
    editor.create_namespaced_custom_object(GROUP, VERSION, ns, "proxypools", pool)
    assert [
        o["metadata"]["name"]
        for o in viewer.list_namespaced_custom_object(GROUP, VERSION, ns, "proxypools")["items"]
    ] == ["pool"]
    assert refused(lambda: viewer.delete_namespaced_custom_object(GROUP, VERSION, ns, "proxies", "by-editor"))
    editor.delete_namespaced_custom_object(GROUP, VERSION, ns, "proxypools", "pool")
    editor.delete_namespaced_custom_object(GROUP, VERSION, ns, "proxies", "by-editor")
