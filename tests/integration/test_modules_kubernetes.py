"""The modules through real ``ansible-playbook`` runs on the ``kubernetes`` provider, against the
real test control plane (tests/cluster): create, idempotence, wait for Running, info, check,
delete; the OwnerReference to a real Proxy; GC with the live UIDs read from the cluster's
Proxy resources; a real ResourceQuota surfacing as ``quota_exceeded``; bad config naming the
field; a batch. The provider runs as a ServiceAccount holding exactly the documented RBAC.
"""

from __future__ import annotations

import ipaddress
import uuid

import pytest
from cluster import kube_testlib
from kubernetes import client as k8s

from .playbook import run_playbook

pytestmark = pytest.mark.playbook

PI = "crawl.egress_proxies.proxy_instance"
INFO = "crawl.egress_proxies.proxy_info"
GC = "crawl.egress_proxies.proxy_gc"
CHECK = "crawl.egress_proxies.proxy_check"


@pytest.fixture
def k8s_env(kube_cluster, kube_admin, kube_namespace, tmp_path):
    """Module defaults for a kubernetes provider running as the namespace's provider identity;
    checks at teardown that no managed Pod of this installation is left."""
    identity = kube_testlib.ProviderIdentity(
        kube_admin, kube_cluster.server, kube_cluster.pki["ca_crt"], kube_namespace, str(tmp_path)
    )
    installation = "it-%s" % uuid.uuid4().hex[:8]
    defaults = {
        "providers": [
            {"name": "k8s", "type": "kubernetes", "kubernetes": {"kubeconfig": identity.kubeconfig}}
        ],
        "installation": installation,
    }
    try:
        yield {
            "defaults": defaults,
            "namespace": kube_namespace,
            "installation": installation,
            "identity": identity,
        }
    finally:
        core = k8s.CoreV1Api(kube_admin)
        selector = "proxy-operator-install=%s" % installation
        left = [p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector=selector).items]
        for name in left:
            core.delete_namespaced_pod(name, kube_namespace, grace_period_seconds=0)
        identity.close()
        assert left == [], "pods left behind: %s" % left


def test_lifecycle_through_the_modules(tmp_path, k8s_env, kube_cluster):
    uid = str(uuid.uuid4())
    ns = k8s_env["namespace"]
    tasks = [
        {
            "name": "create",
            PI: {"provider": "k8s", "uid": uid, "namespace": ns, "wait": True, "wait_timeout": 60},
        },
        {"name": "again", PI: {"provider": "k8s", "uid": uid, "namespace": ns}},
        {"name": "info", INFO: {}},
        {"name": "check", CHECK: {}},
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=k8s_env["defaults"])
    assert run.rc == 0, run.stdout[-3000:]
    created = run["create"]["instance"]
    assert run["create"]["changed"] is True
    assert created["state"] == "Running"
    assert created["id"] == "%s/%s" % (ns, created["name"])
    assert ipaddress.ip_address(created["ip"]) in ipaddress.ip_network(kube_cluster.pod_cidr)
    assert run["again"]["changed"] is False and run["again"]["instance"]["id"] == created["id"]
    assert [i["id"] for i in run["info"]["instances"]] == [created["id"]]
    (provider,) = run["check"]["providers"]
    (target,) = provider["targets"]
    assert target["target"] == "apiserver" and target["ready"] is True, target
    assert target["details"]["serverVersion"] == "v1.37.2"
    assert target["details"]["user"] == k8s_env["identity"].user

    tasks = [
        {"name": "delete", PI: {"provider": "k8s", "id": created["id"], "state": "absent", "wait": True}},
        {"name": "delete again", PI: {"provider": "k8s", "id": created["id"], "state": "absent"}},
        {"name": "info", INFO: {"provider": "k8s", "ids": [created["id"]]}},
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=k8s_env["defaults"])
    assert run.rc == 0, run.stdout[-3000:]
    assert run["delete"]["changed"] is True
    assert run["delete again"]["changed"] is False
    assert run["info"]["not_found"] == [created["id"]]


def _proxy(admin, namespace: str, name: str) -> dict:
    kube_testlib.apply_proxy_crd(admin)
    return kube_testlib.wait_for(
        "Proxy %s" % name, lambda: kube_testlib.create_proxy(admin, namespace, name, {"provider": "k8s"})
    )


def test_owner_reference_and_gc_from_the_clusters_proxies(tmp_path, k8s_env, kube_admin, kube_cluster):
    ns = k8s_env["namespace"]
    proxy = _proxy(kube_admin, ns, "eu-1")
    live = proxy["metadata"]["uid"]
    orphan = str(uuid.uuid4())
    tasks = [
        {
            "name": "create",
            PI: {
                "provider": "k8s",
                "namespace": ns,
                "instances": [
                    {"uid": live, "proxy_name": "eu-1", "owner_reference": True},
                    {"uid": orphan, "proxy_name": "not-a-proxy"},  # not asked: no OwnerReference
                ],
            },
        }
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=k8s_env["defaults"])
    assert run.rc == 0, run.stdout[-3000:]
    by_uid = {r["uid"]: r for r in run["create"]["results"]}
    core = k8s.CoreV1Api(kube_admin)
    owned = core.read_namespaced_pod(by_uid[live]["name"], ns)
    assert [(o.kind, o.name, o.uid) for o in owned.metadata.owner_references] == [("Proxy", "eu-1", live)]
    assert not core.read_namespaced_pod(by_uid[orphan]["name"], ns).metadata.owner_references

    # GC reads the live UIDs from the cluster's Proxy resources (with the admin kubeconfig).
    tasks = [
        {"name": "gc", GC: {"kubeconfig": kube_cluster.kubeconfig, "min_age": "0"}},
        {"name": "info", INFO: {}},
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=k8s_env["defaults"])
    assert run.rc == 0, run.stdout[-3000:]
    assert [d["uid"] for d in run["gc"]["deleted"]] == [orphan]
    assert [i["uid"] for i in run["info"]["instances"]] == [live]
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "delete",
                PI: {"provider": "k8s", "id": by_uid[live]["id"], "state": "absent", "wait": True},
            }
        ],
        module_defaults=k8s_env["defaults"],
    )
    assert run.rc == 0, run.stdout[-3000:]


def test_quota_surfaces_as_quota_exceeded(tmp_path, k8s_env, kube_admin):
    ns = k8s_env["namespace"]
    core = k8s.CoreV1Api(kube_admin)
    core.create_namespaced_resource_quota(
        ns, {"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}}
    )
    kube_testlib.wait_for(
        "quota counted",
        lambda: (core.read_namespaced_resource_quota("no-pods", ns).status.hard or {}).get("pods"),
    )
    run = run_playbook(
        tmp_path,
        [{"name": "create", PI: {"provider": "k8s", "uid": str(uuid.uuid4()), "namespace": ns}}],
        module_defaults=k8s_env["defaults"],
    )
    assert run.rc != 0
    assert run["create"]["error_class"] == "quota_exceeded", run["create"]
    assert "exceeded quota" in run["create"]["msg"]
    assert "k8s create" in run["create"]["msg"]  # the configured provider name


@pytest.mark.parametrize(
    "block,message",
    [
        ({"namespace": "Bad_Namespace"}, "providers[0].kubernetes.namespace"),
        ({"allowedSourceRanges": ["0.0.0.0/0", "nonsense"]}, "providers[0].kubernetes.allowedSourceRanges"),
        ({"resources": {"limits": {"cpu": "fast"}}}, "providers[0].kubernetes.resources.limits"),
        ({"kubeconfig": "relative.yaml"}, "providers[0].kubernetes.kubeconfig"),
        ({"images": "x"}, "providers[0].kubernetes.images: unknown field"),
    ],
)
def test_bad_kubernetes_config_names_the_field(tmp_path, block, message):
    providers = [{"name": "k8s", "type": "kubernetes", "kubernetes": block}]
    run = run_playbook(
        tmp_path, [{"name": "bad", PI: {"providers": providers, "provider": "k8s", "uid": "u"}}]
    )
    assert run.rc != 0
    assert message in run["bad"]["msg"], run["bad"]["msg"]
    assert run["bad"]["error_class"] == "permanent"


def test_batch_of_twenty(tmp_path, k8s_env):
    ns = k8s_env["namespace"]
    uids = ["batch-%02d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(20)]
    tasks = [
        {
            "name": "create",
            PI: {
                "provider": "k8s",
                "namespace": ns,
                "wait": True,
                "wait_timeout": 120,
                "instances": [{"uid": u} for u in uids],
            },
        },
        {
            "name": "delete",
            PI: {
                "provider": "k8s",
                "namespace": ns,
                "state": "absent",
                "wait": True,
                "instances": [{"uid": u} for u in uids],
            },
        },
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=k8s_env["defaults"])
    assert run.rc == 0, run.stdout[-3000:]
    results = run["create"]["results"]
    assert [r["uid"] for r in results] == uids
    assert all(r["state"] == "Running" and not r["failed"] for r in results)
    assert len({r["ip"] for r in results}) == 20
    assert all(r["state"] == "absent" for r in run["delete"]["results"])


def test_auth_through_the_modules_rotates_the_secret_and_never_prints_the_password(
    tmp_path, k8s_env, kube_admin
):
    uid = str(uuid.uuid4())
    ns = k8s_env["namespace"]
    first, second = "Sentinel-%s" % uuid.uuid4().hex, "Rotated-%s" % uuid.uuid4().hex

    def task(name: str, password: str) -> dict:
        auth = {"username": "crawler", "password": password}
        return {
            "name": name,
            PI: {"provider": "k8s", "uid": uid, "namespace": ns, "auth": auth, "wait": True},
        }

    run = run_playbook(
        tmp_path,
        [task("create", first), task("again", first), task("rotate", second)],
        module_defaults=k8s_env["defaults"],
        verbosity=4,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert run["create"]["changed"] is True and run["create"]["instance"]["state"] == "Running"
    assert run["again"]["changed"] is False
    assert run["rotate"]["changed"] is True
    assert run["rotate"]["instance"]["id"] == run["create"]["instance"]["id"]
    name = run["create"]["instance"]["name"]
    core = k8s.CoreV1Api(kube_admin)
    secret = core.read_namespaced_secret(name, ns)
    assert secret.metadata.labels["proxy-operator-uid"] == uid
    dumped = str(kube_admin.sanitize_for_serialization(secret)) + str(
        kube_admin.sanitize_for_serialization(core.read_namespaced_config_map(name, ns))
    )
    for password in (first, second):
        assert password not in run.stdout + run.stderr
        assert password not in dumped
    gone = run_playbook(
        tmp_path,
        [
            {
                "name": "delete",
                PI: {"provider": "k8s", "uid": uid, "namespace": ns, "state": "absent", "wait": True},
            }
        ],
        module_defaults=k8s_env["defaults"],
    )
    assert gone.rc == 0, gone.stdout[-3000:]
    kube_testlib.wait_for(
        "Secret gone",
        lambda: not core.list_namespaced_secret(ns, field_selector="metadata.name=%s" % name).items,
        60,
    )
