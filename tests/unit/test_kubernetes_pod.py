"""The kubernetes provider's pure parts: the Pod and ConfigMap builders, the state table and
the id parser."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import pod as podlib
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.config import (
    KubernetesConfig,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.ids import (
    format_id,
    parse_id,
)

UID = "0b6f3c1e-2d8a-4c11-9a57-5d2f3e9b7a10"
NAME = names.name_from_uid(UID)


def request(**kw) -> contract.CreateRequest:
    base = {"name": NAME, "uid": UID, "namespace": "crawl", "proxy_name": "eu-1", "port": 3128}
    base.update(kw)
    return contract.CreateRequest(**base)


def config(**kw) -> KubernetesConfig:
    return KubernetesConfig.model_validate(kw)


def container(pod: dict) -> dict:
    (only,) = pod["spec"]["containers"]
    return only


def test_pod_carries_the_marks_and_app_labels():
    pod = podlib.build_pod(request(), "crawl", "prod-eu", config())
    labels = pod["metadata"]["labels"]
    assert labels[names.LABEL_MANAGED] == "true"
    assert labels[names.LABEL_UID] == UID
    assert labels[names.LABEL_INSTALL] == "prod-eu"
    assert labels[podlib.LABEL_MANAGED_BY] == podlib.LABEL_MANAGED_BY_VALUE
    assert pod["metadata"]["name"] == NAME and pod["metadata"]["namespace"] == "crawl"


def test_pod_is_owned_by_the_proxy_in_its_namespace():
    pod = podlib.build_pod(request(owner_reference=True), "crawl", "default", config())
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "crawl.example.com/v1alpha1",
            "kind": "Proxy",
            "name": "eu-1",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


@pytest.mark.parametrize(
    ("req", "namespace"),
    [
        (request(proxy_name="", owner_reference=True), "crawl"),  # no Proxy named
        (request(namespace="", owner_reference=True), "default"),  # no namespace given
        (request(owner_reference=True), "egress"),  # override: an owner in another namespace is invalid
        (request(), "crawl"),  # issue 15: not asked for (a playbook's uid is not a Proxy's UID)
    ],
    ids=["no-proxy-name", "no-namespace", "other-namespace", "not-asked"],
)
def test_pod_has_no_owner_without_a_proxy_in_its_namespace(req, namespace):
    pod = podlib.build_pod(req, namespace, "default", config())
    assert "ownerReferences" not in pod["metadata"]


def test_pod_security_is_restrictive():
    pod = podlib.build_pod(request(), "crawl", "default", config())
    spec = pod["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == 13
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "sysctls" not in spec["securityContext"]
    sec = container(pod)["securityContext"]
    assert sec == {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    # Every place Squid writes is a volume, since the root filesystem is read-only.
    mounts = {m["mountPath"] for m in container(pod)["volumeMounts"]}
    assert {"/tmp", "/var/run/squid", "/etc/squid-egress"} <= mounts


def test_low_port_uses_the_unprivileged_port_sysctl_not_a_capability():
    pod = podlib.build_pod(request(port=80), "crawl", "default", config())
    assert pod["spec"]["securityContext"]["sysctls"] == [
        {"name": "net.ipv4.ip_unprivileged_port_start", "value": "80"}
    ]
    assert container(pod)["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_pod_listens_on_the_request_port_with_configured_image_and_resources():
    cfg = config(
        image="registry.example/squid:7",
        resources={"requests": {"cpu": "10m"}, "limits": {"cpu": "1", "memory": "1Gi"}},
    )
    pod = podlib.build_pod(request(port=8080), "crawl", "default", cfg)
    squid = container(pod)
    assert squid["image"] == "registry.example/squid:7"
    assert squid["ports"] == [{"name": "proxy", "containerPort": 8080, "protocol": "TCP"}]
    assert squid["readinessProbe"]["tcpSocket"] == {"port": 8080}
    assert squid["resources"] == {"requests": {"cpu": "10m"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    assert pod["spec"]["volumes"][0] == {"name": "config", "configMap": {"name": NAME}}


def test_default_resources_have_requests_and_limits():
    squid = container(podlib.build_pod(request(), "crawl", "default", config()))
    assert set(squid["resources"]) == {"requests", "limits"}
    assert set(squid["resources"]["limits"]) == {"cpu", "memory"}


def test_config_map_holds_a_restrictive_squid_conf_and_is_owned_by_the_pod():
    cm = podlib.build_config_map(request(port=8080), "crawl", "default", config(), "pod-uid-1")
    assert cm["metadata"]["ownerReferences"][0]["kind"] == "Pod"
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "pod-uid-1"
    assert cm["metadata"]["labels"][names.LABEL_UID] == UID
    conf = cm["data"]["squid.conf"]
    assert "http_port 8080\n" in conf
    assert "acl allowed_src src 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16\n" in conf
    assert "http_access allow allowed_src\n" in conf
    assert "http_access allow all" not in conf.splitlines()
    assert conf.rstrip().endswith("http_access deny all")


def test_config_map_uses_the_configured_source_ranges():
    cm = podlib.build_config_map(
        request(), "crawl", "default", config(allowedSourceRanges=["100.64.0.0/10"]), "u"
    )
    assert "acl allowed_src src 100.64.0.0/10\n" in cm["data"]["squid.conf"]
    assert "10.0.0.0/8" not in cm["data"]["squid.conf"]


STATES = [
    # phase, podIP, deleting, ready -> state
    ("Pending", "", False, False, contract.PROVISIONING),
    ("Pending", "127.100.0.5", False, False, contract.PROVISIONING),
    ("Running", "", False, True, contract.PROVISIONING),
    ("Running", "127.100.0.5", False, False, contract.PROVISIONING),
    ("Running", "127.100.0.5", False, True, contract.RUNNING),
    ("Running", "127.100.0.5", True, True, contract.TERMINATED),
    ("Pending", "", True, False, contract.TERMINATED),
    ("Succeeded", "", False, False, contract.TERMINATED),
    ("Failed", "127.100.0.5", False, False, contract.TERMINATED),
    ("Unknown", "127.100.0.5", False, True, contract.TERMINATED),
    ("Hibernating", "127.100.0.5", False, True, contract.STOPPED),
    ("", "", False, False, contract.STOPPED),
]


@pytest.mark.parametrize(("phase", "ip", "deleting", "ready", "expected"), STATES)
def test_state_table(phase, ip, deleting, ready, expected):
    assert podlib.state_of(phase, ip, deleting, ready) == expected


def test_pod_ready_reads_the_ready_condition():
    assert podlib.pod_ready([{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}])
    assert not podlib.pod_ready([{"type": "Ready", "status": "False"}])
    assert not podlib.pod_ready(None)


def test_id_round_trip():
    assert parse_id(format_id("crawl", NAME)) == ("crawl", NAME)


@pytest.mark.parametrize(
    "bad",
    ["", "crawl", "/name", "crawl/", "a/b/c", "Crawl/name", "crawl/Name", "crawl/na me", "crawl//x", None, 7],
)
def test_id_parser_is_strict(bad):
    with pytest.raises(ValueError, match="malformed kubernetes provider id"):
        parse_id(bad)


def test_auth_mounts_the_password_secret_and_without_it_the_pod_is_unchanged():
    plain = podlib.build_pod(request(), "crawl", "prod-eu", config())
    assert "fsGroup" not in plain["spec"]["securityContext"]
    assert [v["name"] for v in plain["spec"]["volumes"]] == ["config", "tmp", "run", "spool", "logs"]
    assert (
        "auth"
        not in podlib.build_config_map(request(), "crawl", "prod-eu", config(), "pod-uid")["data"][
            "squid.conf"
        ]
    )

    req = request(auth=Auth("crawler", "pw-unit-1"))
    pod = podlib.build_pod(req, "crawl", "prod-eu", config())
    assert pod["spec"]["securityContext"]["fsGroup"] == 13
    assert pod["spec"]["volumes"][-1] == {
        "name": "auth",
        "secret": {"secretName": NAME, "defaultMode": 0o440},
    }
    assert container(pod)["volumeMounts"][-1] == {
        "name": "auth",
        "mountPath": "/etc/squid-egress-auth",
        "readOnly": True,
    }
    secret = podlib.build_secret(req, "crawl", "prod-eu", "pod-uid", req.auth.passwd_line())
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "pod-uid"
    assert secret["metadata"]["labels"][names.LABEL_UID] == UID
    assert "pw-unit-1" not in str(secret) and "pw-unit-1" not in str(pod)
