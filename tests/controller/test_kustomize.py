"""The kustomize install as a user runs it: every overlay renders (with ``kubectl kustomize``
too where kubectl is installed, which must print the same objects), its image tag is the
release's version and nothing anywhere says ``:latest``, the role applies exactly the files the
kustomizations reference, and every rendered object is accepted by the real API server in a
server-side dry run (schema, defaulting and admission; nothing is stored). The ServiceMonitor of
the optional ``monitoring`` component is checked against the Service it selects, and against the
Prometheus Operator's ServiceMonitor CRD (tests/controller/crds/, written after the schema the
project publishes) installed in the test API server.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess

import pytest
import yaml
from cluster import kube_testlib
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient
from kubernetes.utils import create_from_yaml

from . import kustomize_render
from .test_package import collection_version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "controller", "config")
NAMESPACE = "egress-proxies-system"
OVERLAYS = ("default", "with-kubernetes-provider", "ha", "namespaced", "samples")
IMAGE = "egress-proxies-controller"


def key(obj: dict) -> tuple:
    return (obj["apiVersion"], obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def with_component(component: str) -> list[dict]:
    """An overlay of ``default`` plus a component, as a user writes it (in a temp dir)."""
    return kustomize_render.render(os.path.join(CONFIG, "default")) + kustomize_render.render(
        os.path.join(CONFIG, component)
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_kubectl_kustomize_renders_what_the_test_renderer_does(overlay):
    ours = sorted(
        (key(o), json.dumps(o, sort_keys=True))
        for o in kustomize_render.render(os.path.join(CONFIG, overlay))
    )
    assert ours, overlay
    kubectl = shutil.which("kubectl")
    if kubectl:  # not installed by the project: checked where a machine has it
        out = subprocess.run(
            [kubectl, "kustomize", os.path.join(CONFIG, overlay)], capture_output=True, text=True, check=False
        )
        assert out.returncode == 0, out.stderr
        theirs = sorted((key(o), json.dumps(o, sort_keys=True)) for o in yaml.safe_load_all(out.stdout) if o)
        assert theirs == ours


def test_the_image_tag_is_the_version_and_nothing_says_latest():
    version = collection_version()
    (deployment,) = [
        o for o in kustomize_render.render(os.path.join(CONFIG, "default")) if o["kind"] == "Deployment"
    ]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "%s:%s" % (IMAGE, version)
    with open(os.path.join(ROOT, "roles", "controller", "defaults", "main.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["controller_image"] == "%s:%s" % (IMAGE, version)
    files = glob.glob(os.path.join(CONFIG, "**", "*.yaml"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "*.yml"))
    files += [os.path.join(ROOT, "execution-environment.yml")]
    files += glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))  # a ready playbook's default too
    for path in files:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                assert ":latest" not in line and "newTag: latest" not in line, "%s:%d: %s" % (
                    path,
                    number,
                    line,
                )


def test_the_role_applies_exactly_what_the_kustomizations_reference():
    with open(os.path.join(ROOT, "roles", "controller", "vars", "main.yml"), encoding="utf-8") as handle:
        role = yaml.safe_load(handle)
    applied = role["controller_base_files"] + role["controller_kubernetes_provider_files"]
    templated = [role["controller_configmap_file"], role["controller_deployment_file"]]
    _objects, sources = kustomize_render.render_with_sources(os.path.join(CONFIG, "with-kubernetes-provider"))
    referenced = [os.path.relpath(s, CONFIG) for s in sources]
    assert sorted(applied + templated) == sorted(referenced)


# The cluster rights a provider type needs from an overlay (the ClusterRole that grants them).
PROVIDER_RIGHTS = {"kubernetes": "egress-proxies-kubernetes-provider"}


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "samples"])
def test_an_overlays_providers_configmap_names_only_providers_whose_rights_it_grants(overlay):
    """Issue 37: the default install's ConfigMap named a kubernetes provider without its RBAC, so
    its Proxies could only end Forbidden."""
    objects = kustomize_render.render(os.path.join(CONFIG, overlay))
    (configmap,) = [
        o for o in objects if (o["kind"], o["metadata"]["name"]) == ("ConfigMap", "egress-proxies-providers")
    ]
    roles = {o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"}
    providers = yaml.safe_load(configmap["data"]["providers.yaml"])["providers"]
    for entry in providers:
        needed = PROVIDER_RIGHTS.get(entry["type"])
        assert needed is None or needed in roles, "%s names provider %s (%s) without ClusterRole %s" % (
            overlay,
            entry["name"],
            entry["type"],
            needed,
        )
    if overlay == "with-kubernetes-provider":
        assert [e["type"] for e in providers] == ["kubernetes"]


def test_the_optional_service_monitor_scrapes_the_metrics_service():
    objects = with_component("monitoring")
    (monitor,) = [o for o in objects if o["kind"] == "ServiceMonitor"]
    (service,) = [o for o in objects if o["kind"] == "Service"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"] == NAMESPACE
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [NAMESPACE]
    labels = service["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    ports = {p["name"] for p in service["spec"]["ports"]}
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"] and "metrics" in ports
    (default,) = kustomize_render._documents(os.path.join(CONFIG, "default", "kustomization.yaml"))
    assert "components" not in default  # optional: not in the standard install


def test_the_service_monitor_sends_its_own_scraper_token_by_authorization():
    """``authorization`` from a Secret (the Prometheus Operator deprecates ``bearerTokenFile``):
    the component's service-account token Secret, of a ServiceAccount bound to the metrics
    reader ClusterRole and to nothing else."""
    objects = kustomize_render.render(os.path.join(CONFIG, "monitoring"))
    (monitor,) = [o for o in objects if o["kind"] == "ServiceMonitor"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert "bearerTokenFile" not in endpoint and "bearerTokenSecret" not in endpoint
    assert endpoint["authorization"]["type"] == "Bearer"
    credentials = endpoint["authorization"]["credentials"]
    (secret,) = [o for o in objects if o["kind"] == "Secret"]
    assert credentials == {"name": secret["metadata"]["name"], "key": "token"}
    assert secret["metadata"]["namespace"] == monitor["metadata"]["namespace"]  # where the operator reads it
    assert secret["type"] == "kubernetes.io/service-account-token"
    account = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    (sa,) = [o for o in objects if o["kind"] == "ServiceAccount"]
    assert (sa["metadata"]["name"], sa["metadata"]["namespace"]) == (account, NAMESPACE)
    (binding,) = [o for o in objects if o["kind"] == "ClusterRoleBinding"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "egress-proxies-metrics-reader",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
    assert sorted(o["kind"] for o in objects) == [
        "ClusterRoleBinding",
        "Secret",
        "ServiceAccount",
        "ServiceMonitor",
    ]


def test_the_network_policy_admits_exactly_the_metrics_and_health_ports():
    objects = kustomize_render.render(os.path.join(CONFIG, "default"))
    (policy,) = [o for o in objects if o["kind"] == "NetworkPolicy"]
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    admitted = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    container_ports = {p["name"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert admitted == container_ports == {"metrics", "health"}
    # the metrics port only from namespaces labelled metrics=enabled (kubebuilder's convention)
    (metrics_rule,) = [r for r in policy["spec"]["ingress"] if r["ports"][0]["port"] == "metrics"]
    assert metrics_rule["from"] == [{"namespaceSelector": {"matchLabels": {"metrics": "enabled"}}}]


def test_only_the_ha_overlay_has_a_disruption_budget_and_it_protects_a_replica():
    """One replica with a PodDisruptionBudget protects nothing (maxUnavailable 1) or blocks every
    drain (minAvailable 1): the single-replica base has none. The ha overlay runs two replicas
    under leader election, and its budget keeps one of them through a drain."""
    single = kustomize_render.render(os.path.join(CONFIG, "default"))
    assert "PodDisruptionBudget" not in {o["kind"] for o in single}
    (base,) = [o for o in single if o["kind"] == "Deployment"]
    assert base["spec"]["replicas"] == 1
    ha = kustomize_render.render(os.path.join(CONFIG, "ha"))
    (deployment,) = [o for o in ha if o["kind"] == "Deployment"]
    (pdb,) = [o for o in ha if o["kind"] == "PodDisruptionBudget"]
    assert deployment["spec"]["replicas"] == 2
    assert "--leader-elect" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    (spread,) = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert spread["labelSelector"]["matchLabels"].items() <= pod_labels.items()
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pdb["spec"]["minAvailable"] == 1 < deployment["spec"]["replicas"]
    assert "maxUnavailable" not in pdb["spec"]
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    # everything else is the standard install's
    rest = sorted(
        json.dumps(o, sort_keys=True) for o in ha if o["kind"] not in ("Deployment", "PodDisruptionBudget")
    )
    assert rest == sorted(json.dumps(o, sort_keys=True) for o in single if o["kind"] != "Deployment")


CLUSTER_SCOPED = {
    ("crawl.example.com", "providerhealths"),
    ("crawl.example.com", "providerhealths/status"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
}


def test_the_namespaced_overlay_grants_namespaced_rights_in_its_namespace_only():
    """No ClusterRoleBinding of the namespace-scoped install grants a right on a namespaced
    object: the controller's and the pools' ClusterRoles are bound by RoleBindings in the
    controller's namespace, which is the one it watches; only what has no namespace (ProviderHealth,
    the metrics' reviews) and the user roles stay cluster-wide. The cluster-wide install binds the
    same ClusterRoles with ClusterRoleBindings, so the two grant the same verbs."""
    from .test_manifests import grants

    objects = kustomize_render.render(os.path.join(CONFIG, "namespaced"))
    roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    controller_bindings = [
        o
        for o in objects
        if o["kind"] in ("ClusterRoleBinding", "RoleBinding")
        and {"kind": "ServiceAccount", "name": "egress-proxies-controller", "namespace": NAMESPACE}
        in o["subjects"]
    ]
    for binding in controller_bindings:
        if binding["kind"] == "ClusterRoleBinding":
            assert set(grants(roles[binding["roleRef"]["name"]])) <= CLUSTER_SCOPED, binding["metadata"][
                "name"
            ]
        else:
            assert binding["metadata"]["namespace"] == NAMESPACE
    by_role = {(b["kind"], b["roleRef"]["name"]) for b in controller_bindings}
    assert {
        ("RoleBinding", "egress-proxies-controller"),
        ("RoleBinding", "egress-proxies-controller-pools"),
    } <= by_role
    assert ("ClusterRoleBinding", "egress-proxies-controller-cluster-scoped") in by_role
    default = kustomize_render.render(os.path.join(CONFIG, "default"))
    cluster_wide = {
        (b["kind"], b["roleRef"]["name"])
        for b in default
        if b["kind"] in ("ClusterRoleBinding", "RoleBinding")
    }
    assert {(k.replace("ClusterRoleBinding", "RoleBinding"), n) for k, n in cluster_wide} == {
        (k.replace("ClusterRoleBinding", "RoleBinding"), n) for k, n in by_role
    }
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert "--namespace=$(POD_NAMESPACE)" in container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}


@pytest.fixture
def dynamic(kube_admin):
    core = k8s.CoreV1Api(kube_admin)
    for namespace in (NAMESPACE, "default"):
        try:
            core.read_namespace(namespace)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
            core.create_namespace({"metadata": {"name": namespace}})  # kept: other tests use it too
    # the samples have ProxyPools: their CRD too (kube_admin installs the Proxy CRD only)
    kube_testlib.apply_proxy_crd(kube_admin, os.path.join(CONFIG, "crd", "crawl.example.com_proxypools.yaml"))
    return DynamicClient(kube_admin)


def dry_run_apply(dynamic, obj: dict) -> dict:
    resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    return resource.server_side_apply(
        body=obj,
        name=obj["metadata"]["name"],
        namespace=obj["metadata"].get("namespace"),
        field_manager="egress-proxies-kustomize-test",
        force_conflicts=True,
        dry_run="All",
    ).to_dict()


WORKLOAD = {"CustomResourceDefinition", "Deployment", "NetworkPolicy", "Service"}


@pytest.mark.parametrize(
    ("overlay", "kinds"),
    [
        ("default", WORKLOAD),
        ("with-kubernetes-provider", WORKLOAD),
        ("ha", WORKLOAD | {"PodDisruptionBudget"}),
        ("namespaced", WORKLOAD | {"RoleBinding", "ClusterRoleBinding"}),
        ("samples", {"Proxy", "ProxyPool", "Secret"}),
    ],
)
def test_every_rendered_object_passes_a_server_side_dry_run(dynamic, overlay, kinds):
    """The samples' Proxies are checked against the real Proxy CRD's schema (kube_admin installs it)."""
    objects = kustomize_render.render(os.path.join(CONFIG, overlay))
    for obj in objects:
        if overlay == "samples":  # they name no namespace: kubectl's -n gives it
            obj["metadata"]["namespace"] = "default"
        stored = dry_run_apply(dynamic, obj)
        assert key(stored) == key(obj)
    assert kinds <= {o["kind"] for o in objects}


def test_the_dry_run_refuses_what_the_schemas_refuse(dynamic):
    # The check above could pass by accepting anything: a PodDisruptionBudget with both bounds is invalid.
    (pdb,) = [
        o for o in kustomize_render.render(os.path.join(CONFIG, "ha")) if o["kind"] == "PodDisruptionBudget"
    ]
    pdb["spec"]["maxUnavailable"] = 1
    with pytest.raises(Exception, match="minAvailable"):
        dry_run_apply(dynamic, pdb)
    (proxy,) = [
        o
        for o in kustomize_render.render(os.path.join(CONFIG, "samples"))
        if o["metadata"]["name"] == "demo-kubernetes"
    ]
    proxy["metadata"]["namespace"] = "default"
    proxy["spec"]["port"] = 70000
    with pytest.raises(Exception, match="port"):
        dry_run_apply(dynamic, proxy)


SERVICE_MONITOR_CRD = os.path.join(
    os.path.dirname(__file__), "crds", "servicemonitors.monitoring.coreos.com.yaml"
)


@pytest.fixture
def service_monitor_crd(kube_admin, dynamic):
    """The ServiceMonitor CRD in the test API server (kept: installing it twice is harmless)."""
    try:
        create_from_yaml(kube_admin, SERVICE_MONITOR_CRD)
    except k8s.ApiException as exc:
        if exc.status != 409:
            raise
    except Exception as exc:  # create_from_yaml wraps API errors in FailToCreateError
        if "AlreadyExists" not in str(exc) and "409" not in str(exc):
            raise
    extensions = k8s.ApiextensionsV1Api(kube_admin)

    def established() -> bool:
        crd = extensions.read_custom_resource_definition("servicemonitors.monitoring.coreos.com")
        return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])

    kube_testlib.wait_for("ServiceMonitor CRD established", established, timeout=30)
    dynamic.resources.invalidate_cache()
    return dynamic


def test_the_service_monitor_passes_the_prometheus_operator_schema(service_monitor_crd):
    (monitor,) = [o for o in with_component("monitoring") if o["kind"] == "ServiceMonitor"]
    stored = dry_run_apply(service_monitor_crd, monitor)
    assert key(stored) == key(monitor)
    assert stored["spec"] == monitor["spec"]  # nothing pruned: every field is one the schema has
    for field, value, message in (
        ("scheme", "tcp", "scheme"),
        ("interval", "30 seconds", "interval"),
    ):
        bad = json.loads(json.dumps(monitor))
        bad["spec"]["endpoints"][0][field] = value
        with pytest.raises(Exception, match=message):
            dry_run_apply(service_monitor_crd, bad)
    unselective = json.loads(json.dumps(monitor))
    del unselective["spec"]["selector"]
    with pytest.raises(Exception, match="selector"):
        dry_run_apply(service_monitor_crd, unselective)
