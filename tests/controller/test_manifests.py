"""Static checks of the controller's Kubernetes manifests (controller/config/), no cluster needed.

Who runs it: pytest (``make test``). What it guarantees: every manifest parses; the CRDs are
structural and closed (the API server can prune and reject on them), with the printer columns
users see; the schema's own rules reject the bad specs the issue names (checked here with a
small validator of the OpenAPI subset the CRDs use; the real API server tests come with the
controller's e2e); the samples conform to the CRDs and name configured providers; the
Deployment runs restricted; the RBAC is exactly the least-privilege table below; every
kustomization refers to files that exist.
"""

from __future__ import annotations

import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "controller", "config")
GROUP = "crawl.example.com"
NAMESPACE = "egress-proxies-system"
SERVICE_ACCOUNT = "egress-proxies-controller"


def manifest_files() -> list[str]:
    out = []
    for dirpath, _dirs, files in os.walk(CONFIG):
        out.extend(os.path.join(dirpath, f) for f in files if f.endswith((".yaml", ".yml")))
    return sorted(out)


def load_all(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def load(rel: str) -> list[dict]:
    return load_all(os.path.join(CONFIG, rel))


def one(rel: str, kind: str) -> dict:
    found = [doc for doc in load(rel) if doc.get("kind") == kind]
    assert len(found) == 1, "%s: expected one %s, found %d" % (rel, kind, len(found))
    return found[0]


def crd(plural: str) -> dict:
    return one("crd/%s_%s.yaml" % (GROUP, plural), "CustomResourceDefinition")


def schema_of(plural: str) -> dict:
    (version,) = crd(plural)["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


# -- a validator for the OpenAPI subset the CRDs use (types, closed objects, bounds, patterns) --


def violations(schema: dict, value, path: str = "") -> list[str]:
    """What the API server's schema validation (with strict field validation) would refuse."""
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return []
    kind = schema.get("type")
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }
    if not checks[kind](value):
        return ["%s: must be %s" % (path or "<root>", kind)]
    out = []
    if "enum" in schema and value not in schema["enum"]:
        out.append("%s: %r not in %s" % (path, value, schema["enum"]))
    if kind == "string":
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
            out.append("%s: length out of bounds" % path)
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append("%s: does not match %s" % (path, schema["pattern"]))
    elif kind == "integer":
        if value < schema.get("minimum", value) or value > schema.get("maximum", value):
            out.append("%s: %d out of bounds" % (path, value))
    elif kind == "array":
        if len(value) > schema.get("maxItems", len(value)):
            out.append("%s: too many items" % path)
        for index, item in enumerate(value):
            out.extend(violations(schema["items"], item, "%s[%d]" % (path, index)))
    elif kind == "object" and "properties" in schema:
        props = schema["properties"]
        for key in schema.get("required", []):
            if key not in value:
                out.append("%s.%s: required" % (path, key))
        for key, item in value.items():
            if key not in props:
                if not schema.get("x-kubernetes-preserve-unknown-fields"):
                    out.append("%s.%s: unknown field" % (path, key))
                continue
            out.extend(violations(props[key], item, "%s.%s" % (path, key)))
    return out


def proxy_violations(obj: dict) -> list[str]:
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    return violations(schema_of("proxies"), body)


# -- every manifest ---------------------------------------------------------------------------


def test_every_manifest_parses_and_names_its_kind():
    files = manifest_files()
    assert len(files) >= 15, files
    for path in files:
        docs = load_all(path)
        # One document per file: ansible-test's yamllint sanity test refuses multi-document files.
        assert len(docs) == 1, "%s: %d documents" % (path, len(docs))
        assert docs[0].get("apiVersion") and docs[0].get("kind"), "%s: no apiVersion/kind" % path


def kustomizations() -> list[str]:
    return [p for p in manifest_files() if os.path.basename(p) == "kustomization.yaml"]


@pytest.mark.parametrize("path", kustomizations(), ids=lambda p: os.path.relpath(p, CONFIG))
def test_kustomization_refers_to_existing_files(path):
    (doc,) = load_all(path)
    base = os.path.dirname(path)
    entries = doc.get("resources", []) + doc.get("components", [])
    assert entries, "%s lists nothing" % path
    for entry in entries:
        target = os.path.normpath(os.path.join(base, entry))
        assert os.path.exists(target), "%s: %s does not exist" % (path, entry)
        if os.path.isdir(target):
            assert os.path.isfile(os.path.join(target, "kustomization.yaml")), target
    for entry in doc.get("components", []):
        (component,) = load_all(os.path.join(base, entry, "kustomization.yaml"))
        assert component["kind"] == "Component", entry
    # Every manifest next to a kustomization is part of it (nothing silently left out).
    listed = {os.path.normpath(os.path.join(base, e)) for e in entries}
    for name in os.listdir(base):
        full = os.path.join(base, name)
        if name.endswith(".yaml") and name != "kustomization.yaml":
            assert full in listed, "%s is not listed in %s" % (name, path)


def test_default_composes_crds_rbac_manager_but_not_the_optional_component():
    (doc,) = load("default/kustomization.yaml")
    assert doc["resources"] == ["../crd", "../rbac", "../manager"]
    assert "components" not in doc
    (rbac,) = load("rbac/kustomization.yaml")
    assert not any("kubernetes-provider" in entry for entry in rbac["resources"])
    (overlay,) = load("with-kubernetes-provider/kustomization.yaml")
    assert overlay["resources"] == ["../default"]
    assert overlay["components"] == ["../rbac/kubernetes-provider"]


# -- CRDs -------------------------------------------------------------------------------------


def walk(schema: dict, path: str = ""):
    """Every schema node with its path: properties, items, additionalProperties."""
    yield path, schema
    for key, child in schema.get("properties", {}).items():
        yield from walk(child, "%s.%s" % (path, key))
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], path + "[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from walk(schema["additionalProperties"], path + "{}")


@pytest.mark.parametrize("plural", ["proxies", "providerhealths"])
def test_crd_schema_is_structural(plural):
    for path, node in walk(schema_of(plural)):
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields") is True, "%s%s: no type" % (
            plural,
            path,
        )
        for key in node.get("required", []):
            assert key in node.get("properties", {}), "%s%s: required %r is not a property" % (
                plural,
                path,
                key,
            )
        if node.get("x-kubernetes-list-type") == "map":
            keys = node["x-kubernetes-list-map-keys"]
            assert set(keys) <= set(node["items"]["required"]), "%s%s: map keys must be required" % (
                plural,
                path,
            )
        assert "additionalProperties" not in node or "properties" not in node, path
        if "pattern" in node:
            re.compile(node["pattern"])


@pytest.mark.parametrize("plural", ["proxies", "proxypools", "providerhealths"])
def test_every_crd_field_has_a_description(plural):
    """``kubectl explain proxy.spec`` (and every other path) prints each field's description: no
    property of the schema, however deep, may lack one (array items are described by their
    array's field). Except ``metadata``: the API server refuses anything but its type there (it
    is ObjectMeta, which kubectl explain describes itself)."""
    missing = [
        path or "(root)"
        for path, node in walk(schema_of(plural))
        if not path.endswith(("[]", "{}"))
        and path != ".metadata"
        and not str(node.get("description") or "").strip()
    ]
    assert missing == [], "%s: no description: %s" % (plural, ", ".join(missing))


@pytest.mark.parametrize(
    ("plural", "kind", "scope", "short"),
    [("proxies", "Proxy", "Namespaced", "px"), ("providerhealths", "ProviderHealth", "Cluster", "ph")],
)
def test_crd_names_scope_and_status_subresource(plural, kind, scope, short):
    doc = crd(plural)
    assert doc["metadata"]["name"] == "%s.%s" % (plural, GROUP)
    spec = doc["spec"]
    assert (spec["group"], spec["scope"]) == (GROUP, scope)
    assert spec["names"]["kind"] == kind and spec["names"]["plural"] == plural
    assert spec["names"]["shortNames"] == [short]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_proxy_spec_is_closed():
    spec = schema_of("proxies")["properties"]["spec"]
    for path, node in walk(spec, "spec"):
        assert "x-kubernetes-preserve-unknown-fields" not in node, path
        assert "additionalProperties" not in node, path


def test_proxy_placement_keys_are_the_modules_placement_fields_in_camel_case():
    """spec.placement is read by placement.CRD_KEYS (controller spec and manager) and handed to
    the modules as their placement option, field by field: the CRD must name exactly those."""
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import placement

    properties = schema_of("proxies")["properties"]["spec"]["properties"]["placement"]["properties"]
    assert set(properties) == set(placement.CRD_KEYS.values())
    assert placement.CRD_KEYS == {
        "region": "region",
        "zone": "zone",
        "machine_type": "machineType",
        "image": "image",
    }


@pytest.mark.parametrize(
    ("plural", "columns"),
    [
        ("proxies", {"Provider": ".spec.provider", "State": ".status.state", "IP": ".status.ip"}),
        ("providerhealths", {"Type": ".status.type"}),
    ],
)
def test_printer_columns(plural, columns):
    (version,) = crd(plural)["spec"]["versions"]
    found = {c["name"]: c for c in version["additionalPrinterColumns"]}
    ready = '.status.conditions[?(@.type=="Ready")].status'
    expected = dict(columns, Ready=ready)
    if plural == "proxies":  # issue 37: READY False said nothing of why
        expected["Reason"] = '.status.conditions[?(@.type=="Ready")].reason'
    expected["Age"] = ".metadata.creationTimestamp"
    assert list(found) == list(expected)
    for name, json_path in expected.items():
        assert found[name]["jsonPath"] == json_path, name
    assert found["Age"]["type"] == "date"
    # Each column's field exists in the schema, so a rename cannot leave a column empty.
    schema = schema_of(plural)
    for name, json_path in columns.items():
        node = schema
        for part in json_path.strip(".").split("."):
            node = node["properties"][part]
        assert node["type"] == "string", name


def test_proxy_status_fields_and_conditions():
    status = schema_of("proxies")["properties"]["status"]["properties"]
    assert set(status) == {
        "providerID",
        "provider",
        "state",
        "ip",
        "specHash",
        "observedGeneration",
        "conditions",
    }
    assert status["state"]["enum"] == ["", "Provisioning", "Running", "Stopped", "Terminated"]
    assert status["observedGeneration"] == {
        **status["observedGeneration"],
        "type": "integer",
        "format": "int64",
    }
    condition = status["conditions"]["items"]
    assert set(condition["required"]) == {"type", "status", "lastTransitionTime", "reason", "message"}
    assert condition["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert condition["properties"]["lastTransitionTime"]["format"] == "date-time"
    ok = {
        "conditions": [
            {
                "type": "PermanentError",
                "status": "True",
                "reason": "ProviderNotConfigured",
                "message": "",
                "observedGeneration": 3,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    assert violations(schema_of("proxies")["properties"]["status"], ok) == []
    bad = {"conditions": [dict(ok["conditions"][0], status="Yes", reason="not a reason")]}
    problems = violations(schema_of("proxies")["properties"]["status"], bad)
    assert len(problems) == 2, problems


def test_providerhealth_schema():
    schema = schema_of("providerhealths")
    assert schema["properties"]["spec"] == {**schema["properties"]["spec"], "type": "object"}
    assert "required" not in schema  # spec may be omitted
    status = schema["properties"]["status"]["properties"]
    assert {"type", "observedAt", "lastChecked", "conditions", "targets"} <= set(status)
    target = status["targets"]["items"]["properties"]
    assert set(target) == {"name", "address", "ready", "reason", "message", "details", "lastChecked"}
    assert target["ready"]["type"] == "boolean"
    assert target["details"]["x-kubernetes-preserve-unknown-fields"] is True
    sample = {
        "type": "kubernetes",
        "targets": [
            {
                "name": "apiserver",
                "ready": False,
                "details": {"missingRights": ["list pods (all namespaces)"]},
            }
        ],
    }
    assert violations(schema["properties"]["status"], sample) == []


GOOD_PROXY = {"spec": {"provider": "local", "port": 3128}}


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"port": 3128}, ".spec.provider: required"),
        ({"provider": "Local"}, ".spec.provider: does not match"),
        ({"provider": "a-"}, ".spec.provider: does not match"),
        ({"provider": "x" * 64}, ".spec.provider: length out of bounds"),
        ({"provider": "local", "port": 0}, ".spec.port: 0 out of bounds"),
        ({"provider": "local", "port": 65536}, ".spec.port: 65536 out of bounds"),
        ({"provider": "local", "port": "3128"}, ".spec.port: must be integer"),
        ({"provider": "local", "bogus": 1}, ".spec.bogus: unknown field"),
        ({"provider": "local", "placement": {"host": "a"}}, ".spec.placement.host: unknown field"),
        (
            {"provider": "local", "cloudInit": {"secretRef": {"name": "s"}}},
            ".spec.cloudInit.secretRef.key: required",
        ),
        ({"provider": "local", "cloudInit": {"inline": "x" * 262145}}, ".spec.cloudInit.inline: length"),
    ],
)
def test_proxy_schema_rejects_bad_specs(spec, where):
    assert proxy_violations(GOOD_PROXY) == []
    problems = proxy_violations({"spec": spec})
    assert any(p.startswith(where) for p in problems), problems
    assert proxy_violations({}) == [".spec: required"]


def test_proxy_cloud_init_exactly_one_rule_and_port_default():
    spec = schema_of("proxies")["properties"]["spec"]
    (rule,) = spec["properties"]["cloudInit"]["x-kubernetes-validations"]
    assert rule["rule"].replace(" ", "") == "has(self.inline)!=has(self.secretRef)"
    assert "inline" in rule["message"] and "secretRef" in rule["message"]
    assert spec["properties"]["port"]["default"] == 3128


# -- samples ----------------------------------------------------------------------------------


def sample_files() -> list[str]:
    """Every sample manifest, relative to controller/config (other-providers/ included)."""
    out = []
    for directory in ("samples", "samples/other-providers"):
        for name in sorted(os.listdir(os.path.join(CONFIG, directory))):
            if name.endswith(".yaml") and name != "kustomization.yaml":
                out.append("%s/%s" % (directory, name))
    return out


def sample_proxies() -> list[dict]:
    return [doc for rel in sample_files() for doc in load(rel) if doc["kind"] == "Proxy"]


OTHER_PROVIDERS_CONFIGMAP = "samples/other-providers/providers_configmap.yaml"


def providers_document(rel: str) -> dict:
    configmap = one(rel, "ConfigMap")
    assert configmap["metadata"]["name"] == "egress-proxies-providers"
    return yaml.safe_load(configmap["data"]["providers.yaml"])


def test_sample_proxies_conform_and_name_sample_providers():
    entries = {e["name"]: e["type"] for e in providers_document(OTHER_PROVIDERS_CONFIGMAP)["providers"]}
    types = set()
    for proxy in sample_proxies():
        assert proxy["apiVersion"] == "%s/v1alpha1" % GROUP
        assert proxy_violations(proxy) == [], proxy["metadata"]["name"]
        cloud = proxy["spec"].get("cloudInit")
        if cloud is not None:
            assert ("inline" in cloud) != ("secretRef" in cloud)
        types.add(entries[proxy["spec"]["provider"]])
    assert types == {"local", "kubernetes", "gcp", "kvm"}


def test_the_applied_samples_work_with_the_kubernetes_install_in_any_namespace_and_overwrite_nothing():
    """Issue 37: ``kubectl apply -k controller/config/samples`` replaced the install's providers
    ConfigMap, created Proxies of providers the install has not, and pinned namespace default."""
    (kustomization,) = load("samples/kustomization.yaml")
    objects = [doc for rel in kustomization["resources"] for doc in load("samples/" + rel)]
    install = providers_document("manager/providers_configmap.yaml")  # the default: none
    assert install["providers"] == []
    kubernetes_install = {"kubernetes"}  # what with-kubernetes-provider configures
    assert not [o for o in objects if o["kind"] == "ConfigMap"], (
        "a sample would replace an install's ConfigMap"
    )
    for obj in objects:
        assert "namespace" not in obj["metadata"], obj["metadata"]["name"]
        spec = obj.get("spec", {})
        provider = spec.get("provider") or spec.get("template", {}).get("provider")
        if obj["kind"] in ("Proxy", "ProxyPool"):
            assert provider in kubernetes_install, obj["metadata"]["name"]
    pools = [o for o in objects if o["kind"] == "ProxyPool"]
    assert sorted("auth" in p["spec"]["template"] for p in pools) == [False, True]
    secrets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret"}
    for pool in pools:
        ref = pool["spec"]["template"].get("auth", {}).get("secretRef", {}).get("name")
        assert ref is None or set(secrets[ref]["stringData"]) == {"username", "password"}
    other = sorted(os.listdir(os.path.join(CONFIG, "samples", "other-providers")))
    assert "kustomization.yaml" not in other  # nothing applies them by accident


def test_kvm_sample_secret_holds_the_referenced_key():
    secret = one("samples/other-providers/proxy_kvm_secret.yaml", "Secret")
    proxy = one("samples/other-providers/proxy_kvm.yaml", "Proxy")
    ref = proxy["spec"]["cloudInit"]["secretRef"]
    assert secret["metadata"]["name"] == ref["name"]
    assert "namespace" not in secret["metadata"] and "namespace" not in proxy["metadata"]
    assert ref["key"] in secret["stringData"]


@pytest.mark.parametrize("rel", [OTHER_PROVIDERS_CONFIGMAP, "manager/providers_configmap.yaml"])
def test_providers_configmaps_parse(rel):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config

    document = providers_document(rel)
    entries = document["providers"]
    for entry in entries:
        assert set(entry) == {"name", "type", entry["type"]}, entry["name"]
    # Entries of registered types go through the collection's own parser; every registered
    # type must have a sample entry, so a newly registered type needs one here.
    registered = [e for e in entries if registry.lookup(e["type"]) is not None]
    parsed = config.parse(dict(document, providers=registered))
    assert parsed.names() == tuple(e["name"] for e in registered)
    if rel == OTHER_PROVIDERS_CONFIGMAP:
        assert set(registry.type_names()) <= {e["type"] for e in entries}
        assert {e["type"] for e in entries} == {"local", "kubernetes", "gcp", "kvm", "kvm2"}


# -- the Deployment ---------------------------------------------------------------------------


def deployment() -> dict:
    return one("manager/deployment.yaml", "Deployment")


def test_deployment_runs_restricted():
    pod = deployment()["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == SERVICE_ACCOUNT
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    ctx = container["securityContext"]
    assert ctx["runAsNonRoot"] is True
    assert (ctx["runAsUser"], ctx["runAsGroup"]) == (65532, 65532)
    assert ctx["allowPrivilegeEscalation"] is False
    assert ctx["readOnlyRootFilesystem"] is True
    assert ctx["capabilities"] == {"drop": ["ALL"]}
    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not ctx.get("privileged")
    for volume in pod["volumes"]:
        assert "hostPath" not in volume, volume["name"]


def test_deployment_command_probes_resources_env():
    spec = deployment()["spec"]
    assert spec["replicas"] == 1
    (container,) = spec["template"]["spec"]["containers"]
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    assert container["image"] == "egress-proxies-controller:%s" % version  # the release, never :latest
    assert container["command"] == ["/usr/bin/tini", "--", "python", "-m", "egress_proxies_controller"]
    assert container["args"] == [
        "--providers-file=/etc/egress-proxies/providers.yaml",
        "--metrics-addr=:8443",
        "--metrics-cert-dir=/etc/egress-proxies/metrics-tls",
        "--health-addr=:8081",
        "--leader-elect",
    ]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8443, "health": 8081}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert container["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["EGRESS_PROXIES_PROVIDERS_FILE"]["value"] == "/etc/egress-proxies/providers.yaml"


def test_deployment_volumes():
    pod = deployment()["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert set(mounts) == {"/etc/egress-proxies", "/tmp", "/var/lib/egress-proxies"}
    for mount in mounts.values():
        assert "subPath" not in mount  # a subPath mount never sees ConfigMap updates
    config_mount = mounts["/etc/egress-proxies"]
    assert config_mount["readOnly"] is True
    sources = volumes[config_mount["name"]]["projected"]["sources"]
    configmap = next(s["configMap"] for s in sources if "configMap" in s)
    assert configmap["name"] == "egress-proxies-providers"
    assert configmap["items"] == [{"key": "providers.yaml", "path": "providers.yaml"}]
    secrets = {s["secret"]["name"]: s["secret"] for s in sources if "secret" in s}
    assert set(secrets) == {"egress-proxies-ssh", "egress-proxies-controller-metrics-cert"}
    secret = secrets["egress-proxies-ssh"]
    assert secret["optional"] is True
    for item in secret["items"]:
        assert item["path"].startswith("ssh/") and item["mode"] == 0o400, item
    # the metrics port's certificate, where --metrics-cert-dir reads it; self-signed while absent
    tls = secrets["egress-proxies-controller-metrics-cert"]
    assert tls["optional"] is True
    assert {i["key"]: i["path"] for i in tls["items"]} == {
        "tls.crt": "metrics-tls/tls.crt",
        "tls.key": "metrics-tls/tls.key",
    }
    for path in ("/tmp", "/var/lib/egress-proxies"):
        assert "emptyDir" in volumes[mounts[path]["name"]], path


def test_metrics_service_selects_the_controller():
    service = one("manager/service.yaml", "Service")
    labels = deployment()["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"


# -- RBAC -------------------------------------------------------------------------------------

# The whole grant, rule by rule. Widening it must be a deliberate edit of this table.
CONTROLLER_RULES = {
    (GROUP, "proxies"): {"get", "list", "watch", "patch"},
    (GROUP, "proxies/status"): {"update"},
    ("", "secrets"): {"get"},
    ("", "events"): {"create", "patch"},
}
# What has no namespace: cluster-wide in every install (the namespaced overlay included).
CLUSTER_SCOPED_RULES = {
    (GROUP, "providerhealths"): {"get", "list", "create", "delete"},
    (GROUP, "providerhealths/status"): {"update"},
    ("authentication.k8s.io", "tokenreviews"): {"create"},  # authenticated metrics
    ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
}
LEASE_RULES = {("coordination.k8s.io", "leases"): {"get", "create", "update", "list", "delete"}}
KUBERNETES_PROVIDER_RULES = {
    ("", "pods"): {"get", "list", "create", "delete"},
    ("", "configmaps"): {"get", "create", "update", "delete"},
    ("", "secrets"): {"get", "create", "update", "delete"},  # the proxy's password Secret (auth)
    ("authorization.k8s.io", "selfsubjectaccessreviews"): {"create"},
    ("authentication.k8s.io", "selfsubjectreviews"): {"create"},
    (GROUP, "proxies/finalizers"): {"update"},
}


ROLE_FILES = (
    "rbac/cluster_role.yaml",
    "rbac/cluster_scoped_role.yaml",
    "rbac/leader_election_role.yaml",
    "rbac/kubernetes-provider/cluster_role.yaml",
)
BINDING_FILES = (
    "rbac/cluster_role_binding.yaml",
    "rbac/cluster_scoped_role_binding.yaml",
    "rbac/leader_election_role_binding.yaml",
    "rbac/kubernetes-provider/cluster_role_binding.yaml",
)


def grants(role: dict) -> dict:
    out: dict = {}
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, rule  # no resourceNames/nonResourceURLs
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def rbac_roles() -> list[dict]:
    docs = []
    for rel in ROLE_FILES:
        docs.extend(d for d in load(rel) if d["kind"] in ("Role", "ClusterRole"))
    return docs


def test_rbac_is_exactly_the_least_privilege_table():
    controller = one("rbac/cluster_role.yaml", "ClusterRole")
    assert grants(controller) == CONTROLLER_RULES
    assert grants(one("rbac/cluster_scoped_role.yaml", "ClusterRole")) == CLUSTER_SCOPED_RULES
    lease = one("rbac/leader_election_role.yaml", "Role")
    assert lease["metadata"]["namespace"] == NAMESPACE
    assert grants(lease) == LEASE_RULES
    provider = one("rbac/kubernetes-provider/cluster_role.yaml", "ClusterRole")
    assert grants(provider) == KUBERNETES_PROVIDER_RULES


def test_no_role_lists_or_watches_secrets_or_escalates():
    for role in rbac_roles():
        for (_group, resource), verbs in grants(role).items():
            if resource == "secrets":  # the kubernetes provider also writes its proxies' password Secrets
                assert not verbs & {"list", "watch"}, role["metadata"]["name"]
            assert not verbs & {"escalate", "bind", "impersonate"}, role["metadata"]["name"]


def test_every_rule_says_why():
    for rel in ROLE_FILES:
        with open(os.path.join(CONFIG, rel), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        for index, line in enumerate(lines):
            if line.strip().startswith("- apiGroups:"):
                assert lines[index - 1].strip().startswith("#"), "%s:%d: rule without a comment" % (
                    rel,
                    index + 1,
                )


def test_bindings_name_the_controller_service_account():
    account = one("rbac/service_account.yaml", "ServiceAccount")
    assert (account["metadata"]["name"], account["metadata"]["namespace"]) == (SERVICE_ACCOUNT, NAMESPACE)
    assert deployment()["metadata"]["namespace"] == NAMESPACE
    roles = {(r["kind"], r["metadata"]["name"]) for r in rbac_roles()}
    bindings = [doc for rel in BINDING_FILES for doc in load(rel)]
    assert [b["kind"] for b in bindings] == [
        "ClusterRoleBinding",
        "ClusterRoleBinding",
        "RoleBinding",
        "ClusterRoleBinding",
    ]
    for binding in bindings:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
        ]
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in roles
        assert (binding["kind"] == "RoleBinding") == (binding["roleRef"]["kind"] == "Role")


def test_grace_period_covers_the_drain_and_the_lease_timings_are_ordered():
    """SIGTERM drains runs for at most --drain-timeout, renewing the Lease, before it is released:
    the kubelet's SIGKILL must not come first. A leader stops at --renew-deadline, before a
    standby may take over at --lease-duration."""
    from egress_proxies_controller.__main__ import parser

    defaults = parser().parse_args([])
    grace = deployment()["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= defaults.drain_timeout + 30
    assert defaults.retry_period < defaults.renew_deadline < defaults.lease_duration
