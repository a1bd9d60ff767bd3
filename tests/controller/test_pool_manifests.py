"""Static checks of the ProxyPool CRD and the pools' RBAC (controller/config/), no cluster
needed: structural and closed, the scale subresource and printer columns, the bad specs the
schema rejects (naming the field), and the pools' role being exactly its least-privilege table.
The real API server's own rejections (CEL rules included) are in test_e2e_pools.py."""

from __future__ import annotations

import pytest

from .test_manifests import GROUP, crd, grants, one, schema_of, violations, walk

POOL_RULES = {
    (GROUP, "proxypools"): {"list", "watch", "patch"},
    (GROUP, "proxypools/status"): {"update"},
    (GROUP, "proxypools/finalizers"): {"update"},
    (GROUP, "proxies"): {"create", "delete"},
    ("", "secrets"): {"create", "update", "delete"},
    ("", "services"): {"list", "watch", "create"},
    ("discovery.k8s.io", "endpointslices"): {"list", "watch", "create", "update"},
}


def pool_violations(spec: dict) -> list:
    return violations(schema_of("proxypools"), {"spec": spec})


def test_pool_crd_names_scope_scale_and_columns():
    doc = crd("proxypools")
    spec = doc["spec"]
    assert (spec["group"], spec["scope"], spec["names"]["kind"]) == (GROUP, "Namespaced", "ProxyPool")
    (version,) = spec["versions"]
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    columns = {c["name"]: (c["jsonPath"], c["type"]) for c in version["additionalPrinterColumns"]}
    assert columns == {
        "Desired": (".spec.replicas", "integer"),
        "Ready": (".status.readyReplicas", "integer"),
        "Age": (".metadata.creationTimestamp", "date"),
    }


def test_pool_schema_is_structural_and_closed():
    for path, node in walk(schema_of("proxypools")):
        assert "type" in node or node.get("x-kubernetes-int-or-string"), path
        assert "x-kubernetes-preserve-unknown-fields" not in node, path
        for key in node.get("required", []):
            assert key in node.get("properties", {}), path


def test_pool_template_auth_is_the_agreed_shape():
    auth = schema_of("proxypools")["properties"]["spec"]["properties"]["template"]["properties"]["auth"]
    assert auth["required"] == ["secretRef"]
    assert set(auth["properties"]) == {"secretRef"}
    assert auth["properties"]["secretRef"]["required"] == ["name"]
    assert set(auth["properties"]["secretRef"]["properties"]) == {"name"}


GOOD = {
    "replicas": 3,
    "template": {"port": 3128},
    "spread": [{"name": "a", "provider": "local", "weight": 2}],
}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"replicas": -1}, ".spec.replicas: -1 out of bounds"),
        ({"replicas": "3"}, ".spec.replicas: must be integer"),
        ({"bogus": 1}, ".spec.bogus: unknown field"),
        ({"template": {"port": 0}}, ".spec.template.port: 0 out of bounds"),
        ({"template": {"provider": "Bad"}}, ".spec.template.provider: does not match"),
        ({"template": {"auth": {}}}, ".spec.template.auth.secretRef: required"),
        (
            {"template": {"auth": {"secretRef": {"name": "s", "key": "k"}}}},
            ".spec.template.auth.secretRef.key",
        ),
        ({"spread": [{"name": "a"}]}, ".spec.spread[0].provider: required"),
        ({"spread": [{"name": "A", "provider": "local"}]}, ".spec.spread[0].name: does not match"),
        ({"spread": [{"name": "a", "provider": "local", "weight": -1}]}, ".spec.spread[0].weight: -1"),
        ({"spread": [{"name": "a", "provider": "local", "max": -2}]}, ".spec.spread[0].max: -2"),
        ({"spread": [{"name": "a", "provider": "local", "zone": "x"}]}, ".spec.spread[0].zone: unknown"),
        ({"maxAge": "10 minutes"}, ".spec.maxAge: does not match"),
        ({"strategy": {"bogus": 1}}, ".spec.strategy.bogus: unknown field"),
    ],
)
def test_pool_schema_rejects_bad_specs(change, where):
    assert pool_violations(GOOD) == []
    problems = pool_violations(dict(GOOD, **change))
    assert any(p.startswith(where) for p in problems), problems


def test_pool_rules_say_the_int_or_percent_and_the_provider_rule():
    spec = schema_of("proxypools")["properties"]["spec"]
    (rule,) = spec["x-kubernetes-validations"]
    assert "template.provider" in rule["rule"] and "spread" in rule["rule"]
    for field in ("maxSurge", "maxUnavailable"):
        node = spec["properties"]["strategy"]["properties"][field]
        assert node["x-kubernetes-int-or-string"] is True
        (check,) = node["x-kubernetes-validations"]
        assert "%" in check["rule"] and "25%" in check["message"]


def test_pool_rbac_is_exactly_its_table():
    role = one("rbac/pool_cluster_role.yaml", "ClusterRole")
    assert grants(role) == POOL_RULES
    for (_group, resource), verbs in grants(role).items():
        assert not (resource == "secrets" and verbs & {"get", "list", "watch"})  # get: the main role's
    binding = one("rbac/pool_cluster_role_binding.yaml", "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "egress-proxies-controller", "namespace": "egress-proxies-system"}
    ]
