"""Least privilege, proven from the API server's audit log (issue 14).

A control plane of its own whose kube-apiserver writes an audit log; the controller runs under its
ServiceAccount bound only by the shipped RBAC, as the namespace-scoped overlay
(controller/config/namespaced) binds it: its and the pools' ClusterRoles through RoleBindings in the
namespaces it uses, only the cluster-scoped ClusterRole cluster-wide (the cluster-wide install binds
the same ClusterRoles cluster-wide, so it grants the same verbs, in every namespace), through a
scenario that touches every path (leader election, a Proxy with a cloud-init Secret made Ready,
replaced and deleted, the health monitor creating and removing ProviderHealth objects, the same
providers-file problem reported twice on the Lease: one Event, its count patched; a ProxyPool with
auth made Ready, rolled by a template change and by new credentials (its old credentials copy
deleted), scaled to zero and deleted; a ``--shards 2`` replica taking its shards and leaving). Then
every request the ServiceAccount made is read back from the audit log: none was refused, and the
verbs it used are exactly what the roles grant, except ``proxies get``, used only to read an
inline cloud-init's text at a create (the cache keeps its digest; the scenario's Proxy names a
Secret), and ``proxypools/finalizers update``, which admission checks for blockOwnerDeletion (no
request). Every request carries the
User-Agent ``egress-proxies-controller/<version>`` (the collection's version), and the metrics the
build-info gauge with the same version. The metrics are served as controller-runtime's authenticated
metrics are: HTTPS with the configured certificate, 401 without a valid token, 403 for a
ServiceAccount without the metrics-reader binding, 200 with it (the controller's TokenReview and
SubjectAccessReview creates are among the verbs proven).
"""

from __future__ import annotations

import json
import os

import pytest
from cluster import kube_testlib
from cluster.kube_cluster import ControlPlane
from egress_proxies_controller.telemetry import metrics_auth

from . import e2e_lib, kustomize_render
from .e2e_lib import GROUP
from .pool_e2e_lib import POOLS, PoolE2E
from .test_manifests import grants, one
from .test_package import collection_version

pytestmark = [pytest.mark.squid]
SA_USER = "system:serviceaccount:%s:%s" % (e2e_lib.CONTROLLER_NS, e2e_lib.SA)
INLINE_CLOUD_INIT_ONLY = {(GROUP, "proxies", "get")}
# Not a request: the API server's owner-reference admission checks it for blockOwnerDeletion.
ADMISSION_ONLY = {(GROUP, "proxypools/finalizers", "update")}
POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
"""


class AuditedPlane(ControlPlane):
    """The test control plane, its kube-apiserver writing every request to ``audit.log``."""

    def _spawn(self, name, args):
        if name == "kube-apiserver":
            policy = os.path.join(self.dir, "audit-policy.yaml")
            with open(policy, "w") as handle:
                handle.write(POLICY)
            args = [*args, "--audit-policy-file=" + policy, "--audit-log-path=" + self.audit_log]
        super()._spawn(name, args)

    @property
    def audit_log(self) -> str:
        return os.path.join(self.dir, "audit.log")


@pytest.fixture
def audited(tmp_path_factory):
    plane = AuditedPlane(str(tmp_path_factory.mktemp("audited-cluster")), die_with_parent=True)
    plane.start()
    try:
        admin = kube_testlib.api_client(plane.kubeconfig)
        e2e_lib.install_api(admin)
        yield plane, admin
    finally:
        plane.stop()


def used_verbs(audit_log: str) -> tuple[set, list]:
    used, refused = set(), []
    with open(audit_log) as handle:
        for line in handle:
            event = json.loads(line)
            if (event.get("user") or {}).get("username") != SA_USER:
                continue
            ref = event.get("objectRef") or {}
            resource = ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else "")
            entry = (ref.get("apiGroup", ""), resource, event["verb"])
            if (event.get("responseStatus") or {}).get("code") == 403:
                refused.append(entry)
            used.add(entry)
    return used, refused


def user_agents(audit_log: str) -> set:
    with open(audit_log) as handle:
        events = [json.loads(line) for line in handle]
    return {e.get("userAgent", "") for e in events if (e.get("user") or {}).get("username") == SA_USER}


def granted_verbs() -> set:
    out = set()
    for rel, kind in (
        ("rbac/cluster_role.yaml", "ClusterRole"),
        ("rbac/leader_election_role.yaml", "Role"),
        ("rbac/pool_cluster_role.yaml", "ClusterRole"),
        ("rbac/cluster_scoped_role.yaml", "ClusterRole"),
    ):
        for (group, resource), verbs in grants(one(rel, kind)).items():
            out.update((group, resource, verb) for verb in verbs)
    return out


def test_the_controller_uses_exactly_the_verbs_its_roles_grant(audited, tmp_path):
    plane, admin = audited
    namespace = kube_testlib.create_namespace(admin)
    _bind_as_the_namespaced_overlay(admin, namespace)
    env = PoolE2E(admin, plane, namespace, tmp_path)
    env.providers["providers"] = [p for p in env.providers["providers"] if p["name"] in ("local", "tiny")]
    env.controller.write_providers(env.providers)
    scraper, stranger = _metrics_identities(admin, namespace)
    env.controller.metrics_cert_dir = str(tmp_path / "metrics-tls")
    os.makedirs(env.controller.metrics_cert_dir)
    metrics_auth.self_signed(env.controller.metrics_cert_dir, [METRICS_SERVICE], ["127.0.0.1"])
    env.controller.metrics_token = scraper
    # A generous round timeout: on a loaded machine one proxy_check run can take over 20 s, and a
    # round that times out removes nothing.
    env.controller.start(extra_args=["--health-check-interval", "1", "--health-check-timeout", "45"])
    try:
        env.controller.wait_ready()
        _metrics_are_served_only_to_the_metrics_reader(env.controller, stranger)
        sentinel_secret = {"metadata": {"name": "ci"}, "stringData": {"user-data": "#cloud-config\n"}}
        from kubernetes import client as k8s

        k8s.CoreV1Api(admin).create_namespaced_secret(namespace, sentinel_secret)
        env.create(
            "audited", {"provider": "local", "cloudInit": {"secretRef": {"name": "ci", "key": "user-data"}}}
        )
        first = env.wait_ready("audited")
        env.patch_spec("audited", {"port": 3130})
        env.wait(
            "audited",
            lambda o: o != "gone" and o["status"].get("specHash") != first["status"]["specHash"],
            "replaced",
        )
        health = k8s.CustomObjectsApi(admin)
        kube_testlib.wait_for(
            "ProviderHealth tiny",
            lambda: health.list_cluster_custom_object(GROUP, "v1alpha1", "providerhealths")["items"],
            150,
        )
        env.controller.write_providers(dict(env.providers, providers=env.providers["providers"][:1]))
        kube_testlib.wait_for(
            "ProviderHealth tiny removed",
            lambda: all(
                i["metadata"]["name"] != "tiny"
                for i in health.list_cluster_custom_object(GROUP, "v1alpha1", "providerhealths")["items"]
            ),
            150,
        )
        for _attempt in (1, 2):  # the same problem twice: one Event on the Lease, its count patched
            with open(env.controller.providers_file, "w") as handle:
                handle.write("providers: [\n")
            kube_testlib.wait_for(
                "the problem reported", lambda: "providers_file_error 1.0" in env.controller.metrics(), 30
            )
            env.controller.write_providers(env.providers)
            kube_testlib.wait_for(
                "the fix reported", lambda: "providers_file_error 0.0" in env.controller.metrics(), 30
            )
        kube_testlib.wait_for(
            "one ProvidersFileInvalid Event counted twice",
            lambda: (
                [
                    e.count
                    for e in k8s.CoreV1Api(admin).list_namespaced_event(e2e_lib.CONTROLLER_NS).items
                    if e.reason == "ProvidersFileInvalid"
                ]
                == [2]
            ),
            30,
        )
        build_info = 'egress_proxies_controller_build_info{version="%s"} 1.0' % collection_version()
        assert build_info in env.controller.metrics()
        _pool_paths(env)
        env.delete("audited")
        env.wait_gone("audited")
        assert env.controller.stop() == 0
        # --shards: membership and shard Leases listed, its own membership Lease deleted on stop.
        (tmp_path / "sharded").mkdir()
        sharded = e2e_lib.ControllerProcess(
            str(tmp_path / "sharded"), env.kubeconfig, env.providers, namespace, "sharded-" + namespace
        )
        env.controller = sharded
        sharded.start(extra_args=["--shards", "2"])
        sharded.wait_ready()
        assert sharded.stop() == 0
    finally:
        if env.controller.proc is not None and env.controller.proc.poll() is None:
            env.controller.kill()
        from .test_e2e import _kill_squids

        for directory in (env.state_dir, env.state_dir + "-tiny", env.second_dir):
            _kill_squids(directory)
    # Every request names the controller and its version (the collection's), as the API server's
    # audit log and request metrics show it.
    assert user_agents(plane.audit_log) == {"egress-proxies-controller/%s" % collection_version()}
    used, refused = used_verbs(plane.audit_log)
    assert refused == [], "requests the roles refused: %s" % refused
    granted = granted_verbs()
    assert used - granted == set()
    assert granted - used <= INLINE_CLOUD_INIT_ONLY | ADMISSION_ONLY, "granted but never used: %s" % sorted(
        granted - used - INLINE_CLOUD_INIT_ONLY - ADMISSION_ONLY
    )


def _bind_as_the_namespaced_overlay(admin, namespace: str) -> None:
    """The controller's rights as controller/config/namespaced grants them: its and the pools'
    ClusterRoles bound by RoleBindings only (the cluster-wide bindings install_api made are
    deleted), in the namespace it watches, which in the overlay is its own; here the Proxies live in
    ``namespace`` and the Lease in the controller's namespace, so the overlay's RoleBindings are
    made in both. Only the cluster-scoped ClusterRole stays bound cluster-wide. A request the
    controller made beyond its namespace would be refused, and the audit would show it."""
    from kubernetes import client as k8s

    objects = kustomize_render.render(os.path.join(e2e_lib.CONFIG, "namespaced"))
    rbac = k8s.RbacAuthorizationV1Api(admin)
    kept = {o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRoleBinding"}
    for binding in rbac.list_cluster_role_binding().items:
        if (
            binding.metadata.name.startswith("egress-proxies-controller")
            and binding.metadata.name not in kept
        ):
            rbac.delete_cluster_role_binding(binding.metadata.name)
    overlay = [o for o in objects if o["kind"] == "RoleBinding" and o["roleRef"]["kind"] == "ClusterRole"]
    assert {b["roleRef"]["name"] for b in overlay} == {
        "egress-proxies-controller",
        "egress-proxies-controller-pools",
    }
    for binding in overlay:
        for where in (e2e_lib.CONTROLLER_NS, namespace):
            rbac.create_namespaced_role_binding(
                where, dict(binding, metadata=dict(binding["metadata"], namespace=where))
            )


METRICS_SERVICE = "egress-proxies-controller-metrics.egress-proxies-system.svc"


def _metrics_identities(admin, namespace: str) -> tuple[str, str]:
    """Tokens of two ServiceAccounts: one bound to the shipped metrics-reader ClusterRole, one not."""
    from kubernetes import client as k8s

    core, rbac = k8s.CoreV1Api(admin), k8s.RbacAuthorizationV1Api(admin)
    tokens = []
    for name in ("metrics-scraper", "stranger"):
        core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
        tokens.append(
            core.create_namespaced_service_account_token(name, namespace, {"spec": {}}).status.token
        )
    reader = one("rbac/metrics_reader_role.yaml", "ClusterRole")["metadata"]["name"]
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": "metrics-scraper-" + namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": reader},
            "subjects": [{"kind": "ServiceAccount", "name": "metrics-scraper", "namespace": namespace}],
        }
    )
    return tokens[0], tokens[1]


def _metrics_are_served_only_to_the_metrics_reader(controller, stranger: str) -> None:
    """HTTPS with the certificate of --metrics-cert-dir; no token or an unknown one 401, a
    ServiceAccount without the metrics-reader binding 403, one with it 200 and real metrics."""
    import ssl

    served = ssl.get_server_certificate(("127.0.0.1", controller.metrics_port), timeout=10)
    with open(os.path.join(controller.metrics_cert_dir, "tls.crt")) as handle:
        assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(handle.read())
    assert controller.metrics_request(None)[0] == 401
    assert controller.metrics_request("not-a-token")[0] == 401
    code, body = controller.metrics_request(stranger)
    assert (code, "system:serviceaccount:" in body) == (403, True), body
    code, body = controller.metrics_request(controller.metrics_token)
    assert code == 200, body
    assert 'egress_proxies_controller_build_info{version="%s"} 1.0' % collection_version() in body
    assert "rest_client_requests_total" in body


def _pool_paths(env) -> None:
    """A pool with auth made Ready (members created, its credentials copy, the endpoints
    Secret, Service and EndpointSlice created and rewritten), rolled by a template change (the
    slice's port) and by new credentials (the old copy deleted), scaled to zero (members
    deleted) and deleted (its finalizer released)."""
    from kubernetes import client as k8s

    pools = env
    core = k8s.CoreV1Api(env.admin)
    core.create_namespaced_secret(
        env.namespace,
        {"metadata": {"name": "apool-creds"}, "stringData": {"username": "u", "password": "one"}},
    )
    auth = {"secretRef": {"name": "apool-creds"}}
    pools.create_pool("apool", {"replicas": 1, "template": {"provider": "local", "auth": auth}})
    pools.wait_settled("apool", 1)
    (first_copy,) = {m["spec"]["auth"]["secretRef"]["name"] for m in pools.members("apool")}
    core.patch_namespaced_secret("apool-creds", env.namespace, {"stringData": {"password": "two"}})
    pools.wait_pool(
        "apool",
        lambda o: (
            (o.get("status") or {}).get("authSecrets") not in (None, [first_copy])
            and first_copy not in (o.get("status") or {}).get("authSecrets")
            and len(pools.ready_members("apool")) == 1
        ),
        "rolled to new credentials, the old copy deleted",
    )
    env.custom.patch_namespaced_custom_object(
        GROUP, "v1alpha1", env.namespace, POOLS, "apool", {"spec": {"template": {"port": 3131}}}
    )
    pools.wait_pool(
        "apool",
        lambda o: (
            [m["spec"].get("port") for m in pools.ready_members("apool")] == [3131]
            and len(pools.members("apool")) == 1
        ),
        "rolled to port 3131",
    )
    pools.scale("apool", 0)
    pools.wait_pool("apool", lambda o: pools.members("apool") == [], "scaled to zero")
    pools.delete_pool("apool")
    kube_testlib.wait_for("pool gone", lambda: pools.pool("apool") is None, 60)
