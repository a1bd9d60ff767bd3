"""Helpers for tests that use the test control plane: an admin client, throwaway namespaces,
the Proxy CRD, and a provider identity that holds exactly the RBAC of the controller's
kubernetes-provider component (controller/config/rbac/kubernetes-provider/cluster_role.yaml).

Used by the fixtures in ``kube_fixture.py`` and by the kubernetes tests directly. Everything a
helper creates is either namespaced (and goes with its namespace) or removed by the helper's
own cleanup.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RBAC_FILE = os.path.join(ROOT, "controller", "config", "rbac", "kubernetes-provider", "cluster_role.yaml")
PROXY_CRD_FILE = os.path.join(ROOT, "controller", "config", "crd", "crawl.example.com_proxies.yaml")
PROVIDER_ROLE = "egress-proxies-kubernetes-provider"


def api_client(kubeconfig: str) -> k8s.ApiClient:
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    return k8s.ApiClient(configuration)


def wait_for(what: str, probe, timeout: float = 30.0, interval: float = 0.1, fatal=()):
    """Poll ``probe`` until it returns something truthy; fail with the last error otherwise
    (at once when it raises one of the ``fatal`` exception types)."""
    end = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = probe()
            if value:
                return value
        except fatal:
            raise
        except Exception as exc:  # not yet
            last = exc
        if time.monotonic() > end:
            raise AssertionError("%s: not within %.0fs (last error: %s)" % (what, timeout, last))
        time.sleep(interval)


def create_namespace(admin: k8s.ApiClient, prefix: str = "t") -> str:
    """A fresh namespace whose default ServiceAccount exists (Pods can be created in it)."""
    name = "%s-%s" % (prefix, uuid.uuid4().hex[:10])
    core = k8s.CoreV1Api(admin)
    core.create_namespace({"metadata": {"name": name, "labels": {"egress-proxies-test": "true"}}})
    wait_for(
        "default ServiceAccount in %s" % name,
        lambda: core.read_namespaced_service_account("default", name),
    )
    return name


def delete_namespace(admin: k8s.ApiClient, name: str) -> None:
    try:
        k8s.CoreV1Api(admin).delete_namespace(name, propagation_policy="Background")
    except ApiException as exc:
        if exc.status != 404:
            raise


def provider_cluster_role() -> dict:
    with open(RBAC_FILE, encoding="utf-8") as handle:
        role = yaml.safe_load(handle)
    assert role["kind"] == "ClusterRole" and role["metadata"]["name"] == PROVIDER_ROLE
    return role


def apply_proxy_crd(admin: k8s.ApiClient, path: str = PROXY_CRD_FILE) -> None:
    """Install the controller's Proxy CRD, or the one at ``path`` (idempotent), and wait until
    it is served."""
    with open(path, encoding="utf-8") as handle:
        crd = yaml.safe_load(handle)
    ext = k8s.ApiextensionsV1Api(admin)
    try:
        ext.create_custom_resource_definition(crd)
    except ApiException as exc:
        if exc.status != 409:
            raise
    wait_for(
        "%s established" % crd["metadata"]["name"],
        lambda: any(
            c.type == "Established" and c.status == "True"
            for c in ext.read_custom_resource_definition(crd["metadata"]["name"]).status.conditions or ()
        ),
    )


def create_proxy(admin: k8s.ApiClient, namespace: str, name: str, spec: dict) -> dict:
    """A Proxy object (the CRD must be applied); returns it as the API server stored it."""
    return k8s.CustomObjectsApi(admin).create_namespaced_custom_object(
        "crawl.example.com",
        "v1alpha1",
        namespace,
        "proxies",
        {
            "apiVersion": "crawl.example.com/v1alpha1",
            "kind": "Proxy",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


def ensure_provider_role(admin: k8s.ApiClient) -> None:
    """Apply the documented ClusterRole (create, or replace an older copy)."""
    rbac = k8s.RbacAuthorizationV1Api(admin)
    role = provider_cluster_role()
    try:
        rbac.create_cluster_role(role)
    except ApiException as exc:
        if exc.status != 409:
            raise
        rbac.replace_cluster_role(PROVIDER_ROLE, role)


class ProviderIdentity:
    """A ServiceAccount bound to the documented ClusterRole, with a token kubeconfig.

    ``unbind()``/``bind()`` take the binding away and give it back (waiting until the
    authorizer agrees), which is how a test makes the provider's list fail for real.
    """

    def __init__(self, admin: k8s.ApiClient, server: str, ca_file: str, namespace: str, directory: str):
        self.admin = admin
        self.namespace = namespace
        self.name = "egress-proxies"
        self.user = "system:serviceaccount:%s:%s" % (namespace, self.name)
        self.binding = "egress-proxies-%s" % namespace
        core = k8s.CoreV1Api(admin)
        core.create_namespaced_service_account(namespace, {"metadata": {"name": self.name}})
        token = core.create_namespaced_service_account_token(
            self.name, namespace, {"spec": {"expirationSeconds": 3600}}
        ).status.token
        self.token = token  # for the tests of K8S_AUTH_API_KEY (AWX's bearer token credential)
        self.kubeconfig = os.path.join(directory, "provider-%s.kubeconfig" % namespace)
        fd = os.open(self.kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "test", "cluster": {"server": server, "certificate-authority": ca_file}}
                    ],
                    "users": [{"name": self.name, "user": {"token": token}}],
                    "contexts": [{"name": "provider", "context": {"cluster": "test", "user": self.name}}],
                    "current-context": "provider",
                },
                handle,
            )
        self.bind()

    def allowed(self, verb: str, resource: str, namespace: str = "") -> bool:
        review = k8s.AuthorizationV1Api(self.admin).create_subject_access_review(
            {
                "spec": {
                    "user": self.user,
                    "groups": ["system:serviceaccounts", "system:authenticated"],
                    "resourceAttributes": {"verb": verb, "resource": resource, "namespace": namespace},
                }
            }
        )
        return bool(review.status.allowed)

    def bind(self) -> None:
        try:
            k8s.RbacAuthorizationV1Api(self.admin).create_cluster_role_binding(
                {
                    "metadata": {"name": self.binding, "labels": {"egress-proxies-test": "true"}},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": PROVIDER_ROLE,
                    },
                    "subjects": [{"kind": "ServiceAccount", "name": self.name, "namespace": self.namespace}],
                }
            )
        except ApiException as exc:
            if exc.status != 409:
                raise
        wait_for("RBAC grants %s" % self.user, lambda: self.allowed("list", "pods"))

    def unbind(self) -> None:
        try:
            k8s.RbacAuthorizationV1Api(self.admin).delete_cluster_role_binding(self.binding)
        except ApiException as exc:
            if exc.status != 404:
                raise
        wait_for("RBAC revokes %s" % self.user, lambda: not self.allowed("list", "pods"))

    def close(self) -> None:
        try:
            k8s.RbacAuthorizationV1Api(self.admin).delete_cluster_role_binding(self.binding)
        except ApiException as exc:
            if exc.status != 404:
                raise
