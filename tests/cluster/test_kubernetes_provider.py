"""The ``kubernetes`` provider against the real test control plane, beyond the conformance
suite: the full lifecycle, a real ResourceQuota, the OwnerReference to a real Proxy (and the
garbage collector acting on it), the securityContext and squid.conf as stored, a Pod being
deleted, the health check with and without its rights, and the namespace override."""

from __future__ import annotations

import base64
import ipaddress
import os
import shutil
import subprocess
import time
import uuid

import pytest
import yaml
from contract.kubernetes_backend import kubernetes_backend
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ProviderError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.ids import parse_id
from cluster import kube_testlib

backend = kubernetes_backend  # the harness fixture (contract/kubernetes_backend.py)


def dl() -> Deadline:
    return Deadline(30)


def wait_state(provider, provider_id: str, wanted: str, timeout: float = 30.0) -> contract.Instance:
    def reached():
        instance = provider.get(provider_id, dl())
        return instance if instance.state == wanted else None

    return kube_testlib.wait_for("%s %s" % (provider_id, wanted), reached, timeout=timeout)


def wait_gone(provider, provider_id: str, timeout: float = 30.0) -> None:
    def gone():
        try:
            provider.get(provider_id, dl())
        except ProviderError as exc:
            if errors.class_of(exc) == errors.NOT_FOUND:
                return True
            raise
        return False

    kube_testlib.wait_for("%s gone" % provider_id, gone, timeout=timeout)


def uid() -> str:
    return str(uuid.uuid4())


def test_full_lifecycle(backend, kube_cluster):
    provider = backend.provider
    req = backend.request(uid())
    started = time.monotonic()
    provider_id = provider.create(req, dl())
    assert provider_id == "%s/%s" % (backend.namespace, req.name)
    assert provider.create(req, dl()) == provider_id  # idempotent
    running = wait_state(provider, provider_id, contract.RUNNING)
    running_after = time.monotonic() - started
    assert ipaddress.ip_address(running.ip) in ipaddress.ip_network(kube_cluster.pod_cidr)
    assert running.uid == req.uid and running.installation == backend.installation
    assert [i.id for i in provider.list_by_tag(dl()) if i.name == req.name] == [provider_id]
    (status,) = provider.check(dl())
    assert status.ready, status
    provider.delete(provider_id, dl())
    provider.delete(provider_id, dl())  # idempotent
    wait_gone(provider, provider_id)
    provider.delete(provider_id, dl())  # still fine once gone
    assert kube_testlib.wait_for("nothing left", lambda: backend.leftovers(provider_id) == [])
    total = time.monotonic() - started
    # A figure for the record (docs/testing.md), not an assertion.
    print("\nkubernetes lifecycle: Running after %.2fs, gone after %.2fs" % (running_after, total))


def test_quota_exceeded_by_a_real_resource_quota(backend, kube_admin):
    core = k8s.CoreV1Api(kube_admin)
    core.create_namespaced_resource_quota(
        backend.namespace, {"metadata": {"name": "one-pod"}, "spec": {"hard": {"pods": "1"}}}
    )
    kube_testlib.wait_for(
        "quota counted",
        lambda: (core.read_namespaced_resource_quota("one-pod", backend.namespace).status.hard or {}).get(
            "pods"
        ),
    )
    first = backend.provider.create(backend.request(uid()), dl())
    second = backend.request(uid())
    with pytest.raises(ProviderError) as caught:
        backend.provider.create(second, dl())
    assert errors.class_of(caught.value) == errors.QUOTA_EXCEEDED, caught.value
    assert caught.value.provider_name == "contract-k8s"
    assert "exceeded quota" in str(caught.value)
    assert isinstance(caught.value.__cause__, ApiException) and caught.value.__cause__.status == 403
    assert backend.leftovers("%s/%s" % (backend.namespace, second.name)) == []
    # Freeing the quota lets the same request through: QuotaExceeded is worth retrying.
    backend.provider.delete(first, dl())
    wait_gone(backend.provider, first)
    created = kube_testlib.wait_for("create after quota freed", lambda: backend.provider.create(second, dl()))
    assert created.endswith("/" + second.name)


def test_rbac_denial_is_permanent_and_check_names_the_missing_rights(backend):
    backend.identity.unbind()
    try:
        with pytest.raises(ProviderError) as caught:
            backend.provider.create(backend.request(uid()), dl())
        assert errors.class_of(caught.value) == errors.PERMANENT
        assert "forbidden" in str(caught.value)
        (status,) = backend.provider.check(dl())
        assert not status.ready
        assert status.reason == contract.REASON_FORBIDDEN
        assert "list pods (all namespaces)" in status.details["missingRights"]
        assert "create pods (all namespaces)" in status.details["missingRights"]
    finally:
        backend.identity.bind()
    (status,) = backend.provider.check(dl())
    assert status.ready and status.reason == contract.REASON_REACHABLE


def test_check_details(backend, kube_cluster):
    (status,) = backend.provider.check(dl())
    assert status.target == "apiserver"
    assert status.address == kube_cluster.server
    assert status.details["serverVersion"] == "v1.37.2"
    assert status.details["namespace"] == "*"
    assert status.details["user"] == backend.identity.user
    scoped = backend.build(namespace=backend.namespace)
    (status,) = scoped.check(dl())
    assert status.ready and status.details["namespace"] == backend.namespace


def test_check_reports_config_and_reachability_problems(backend, tmp_path):
    (status,) = backend.build(kubeconfig=str(tmp_path / "missing.kubeconfig")).check(dl())
    assert (status.ready, status.reason) == (False, "ClientConfigInvalid")
    with open(backend.identity.kubeconfig, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    doc["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:%d" % _closed_port()
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text(yaml.safe_dump(doc))
    provider = backend.build(kubeconfig=str(dead))
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (False, contract.REASON_UNREACHABLE), status
    with pytest.raises(ProviderError) as caught:
        provider.get("%s/proxy-aaaaaaaaaaaaaaaa" % backend.namespace, dl())
    assert errors.class_of(caught.value) == errors.TRANSIENT  # never NotFound when unreachable


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_pod_is_owned_by_its_proxy_and_locked_down(backend, kube_admin):
    kube_testlib.apply_proxy_crd(kube_admin)
    custom = k8s.CustomObjectsApi(kube_admin)
    proxy = kube_testlib.wait_for(
        "Proxy created",
        lambda: kube_testlib.create_proxy(
            kube_admin, backend.namespace, "eu-1", {"provider": "contract-k8s", "port": 8080}
        ),
    )
    proxy_uid = proxy["metadata"]["uid"]
    req = backend.request(proxy_uid, proxy_name="eu-1", port=8080, owner_reference=True)
    provider_id = backend.provider.create(req, dl())
    wait_state(backend.provider, provider_id, contract.RUNNING)
    pod = backend.pod(provider_id)
    (owner,) = pod.metadata.owner_references
    assert (owner.api_version, owner.kind, owner.name, owner.uid) == (
        "crawl.example.com/v1alpha1",
        "Proxy",
        "eu-1",
        proxy_uid,
    )
    assert owner.controller is True and owner.block_owner_deletion is True
    assert pod.spec.security_context.run_as_non_root is True
    assert pod.spec.automount_service_account_token is False
    (squid,) = pod.spec.containers
    sec = squid.security_context
    assert sec.allow_privilege_escalation is False and sec.privileged is False
    assert sec.read_only_root_filesystem is True and sec.run_as_non_root is True
    assert sec.capabilities.drop == ["ALL"] and not sec.capabilities.add
    assert squid.resources.limits == {"cpu": "500m", "memory": "256Mi"}
    assert squid.ports[0].container_port == 8080
    namespace, name = parse_id(provider_id)
    cm = k8s.CoreV1Api(kube_admin).read_namespaced_config_map(name, namespace)
    assert [(r.kind, r.uid) for r in cm.metadata.owner_references] == [("Pod", pod.metadata.uid)]
    assert cm.metadata.labels[names.LABEL_UID] == proxy_uid
    conf = cm.data["squid.conf"]
    assert "http_port 8080" in conf.splitlines()
    assert "http_access allow all" not in conf.splitlines()
    _squid_parses(conf)
    # The garbage collector honours the OwnerReference: deleting the Proxy removes the Pod and,
    # through the Pod, its ConfigMap, even if nobody calls delete.
    custom.delete_namespaced_custom_object("crawl.example.com", "v1alpha1", namespace, "proxies", "eu-1")
    wait_gone(backend.provider, provider_id, timeout=60)
    assert kube_testlib.wait_for(
        "ConfigMap collected", lambda: backend.leftovers(provider_id) == [], timeout=60
    )


def _squid_parses(conf: str) -> None:
    squid = shutil.which("squid") or shutil.which("squid", path="/usr/sbin")
    assert squid, "squid is not installed"
    path = "/tmp/egress-k8s-test-%s.conf" % uuid.uuid4().hex
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(conf)
    try:
        out = subprocess.run(
            [squid, "-k", "parse", "-f", path], capture_output=True, text=True, timeout=60, check=False
        )
    finally:
        os.unlink(path)
    assert out.returncode == 0 and "ERROR" not in out.stderr + out.stdout, out.stderr


def test_pod_being_deleted_is_never_running(backend, kube_admin):
    provider = backend.provider
    provider_id = provider.create(backend.request(uid()), dl())
    wait_state(provider, provider_id, contract.RUNNING)
    namespace, name = parse_id(provider_id)
    core = k8s.CoreV1Api(kube_admin)
    # A finalizer holds the Pod in "being deleted", as a slow kubelet or a stuck volume would.
    core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": ["example.com/hold"]}})
    provider.delete(provider_id, dl())
    kube_testlib.wait_for("deletion timestamp", lambda: backend.pod(provider_id).metadata.deletion_timestamp)
    pod = backend.pod(provider_id)
    assert pod.status.phase == "Running" and pod.status.pod_ip  # the phase alone would say Running
    instance = provider.get(provider_id, dl())
    assert instance.state == contract.TERMINATED and instance.ip == ""
    assert provider_id in {i.id for i in provider.list_by_tag(dl())}  # still listed: name is taken
    core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
    wait_gone(provider, provider_id)


def test_namespace_override_puts_every_pod_in_one_namespace(backend, kube_admin):
    target = kube_testlib.create_namespace(kube_admin, "egress")
    try:
        provider = backend.build(namespace=target)
        req = backend.request(uid())  # asks for backend.namespace; the override wins
        provider_id = provider.create(req, dl())
        assert provider_id == "%s/%s" % (target, req.name)
        assert provider.id_for(req.name, req.placement, req.namespace) == provider_id
        # Without the override, id_for follows create's rule: the request's namespace, else default.
        own = backend.provider
        assert own.id_for(req.name, req.placement, req.namespace) == "%s/%s" % (backend.namespace, req.name)
        assert own.id_for(req.name, req.placement) == "default/%s" % req.name
        pod = backend.pod(provider_id)
        assert not pod.metadata.owner_references  # an owner in another namespace would be invalid
        wait_state(provider, provider_id, contract.RUNNING)
        provider.delete(provider_id, dl())
        wait_gone(provider, provider_id)
    finally:
        kube_testlib.delete_namespace(kube_admin, target)


def test_adoption_recreates_a_missing_config_map(backend, kube_admin):
    req = backend.request(uid())
    provider_id = backend.provider.create(req, dl())
    namespace, name = parse_id(provider_id)
    core = k8s.CoreV1Api(kube_admin)
    core.delete_namespaced_config_map(name, namespace)
    assert backend.provider.create(req, dl()) == provider_id
    cm = core.read_namespaced_config_map(name, namespace)
    assert cm.metadata.owner_references[0].uid == backend.pod(provider_id).metadata.uid
    backend.provider.delete(provider_id, dl())
    wait_gone(backend.provider, provider_id)


@pytest.mark.parametrize("phase", ["Failed", "Succeeded"])
def test_create_replaces_a_finished_pod_of_ours(backend, phase):
    """Issue 15: create adopted our Pod after it had finished, so it stayed Terminated and every
    state: present run reported changed. A finished Pod never runs again: it is replaced."""
    req = backend.request(uid())
    provider_id = backend.provider.create(req, dl())
    wait_state(backend.provider, provider_id, contract.RUNNING)
    namespace, name = parse_id(provider_id)
    old = backend.pod(provider_id).metadata.uid
    backend.core.patch_namespaced_pod_status(name, namespace, {"status": {"phase": phase}})
    assert backend.provider.get(provider_id, dl()).state == contract.TERMINATED
    try:
        assert backend.provider.create(req, dl()) == provider_id
        running = wait_state(backend.provider, provider_id, contract.RUNNING)
        assert running.uid == req.uid
        assert backend.pod(provider_id).metadata.uid != old, "a new Pod, not the finished one"
        assert backend.core.read_namespaced_config_map(name, namespace).data["squid.conf"]
    finally:
        backend.provider.delete(provider_id, dl())
        wait_gone(backend.provider, provider_id)


AUTH_SENTINEL = "Sentinel-K8s-Pw-%s" % uuid.uuid4().hex[:8]


def _auth(password: str) -> Auth:
    return Auth("crawler", password)


def test_auth_is_a_mounted_secret_owned_like_the_config_map_and_rotated_in_place(backend, kube_admin):
    """Against the real API server: the Secret holds the hash only, is marked and owned by the
    Pod, is mounted group-readable for Squid, the squid.conf asks for it; a rotation updates it
    in place (same Pod); adding or removing auth on a running Pod is refused; delete removes it;
    a same-named Secret someone else made is never touched."""
    core = k8s.CoreV1Api(kube_admin)
    provider = backend.provider
    req = backend.request(uid(), auth=_auth(AUTH_SENTINEL))
    provider_id = provider.create(req, dl())
    wait_state(provider, provider_id, contract.RUNNING)
    namespace, name = parse_id(provider_id)
    pod = backend.pod(provider_id)
    secret = core.read_namespaced_secret(name, namespace)
    assert [(r.kind, r.uid) for r in secret.metadata.owner_references] == [("Pod", pod.metadata.uid)]
    assert secret.metadata.labels[names.LABEL_UID] == req.uid and names.is_managed(secret.metadata.labels)
    line = base64.b64decode(secret.data["passwd"]).decode()
    assert line.startswith("crawler:$6$") and req.auth.matches(line)
    (volume,) = [v for v in pod.spec.volumes if v.name == "auth"]
    assert (volume.secret.secret_name, volume.secret.default_mode) == (name, 0o440)
    assert pod.spec.security_context.fs_group == 13
    (squid,) = pod.spec.containers
    assert [m.mount_path for m in squid.volume_mounts if m.name == "auth"] == ["/etc/squid-egress-auth"]
    conf = core.read_namespaced_config_map(name, namespace).data["squid.conf"]
    assert "auth_param basic program /usr/lib/squid/basic_ncsa_auth /etc/squid-egress-auth/passwd" in conf
    assert "http_access deny !authenticated" in conf.splitlines()
    _squid_parses(conf)

    assert provider.create(req, dl()) == provider_id  # idempotent, nothing rewritten
    assert (
        core.read_namespaced_secret(name, namespace).metadata.resource_version
        == secret.metadata.resource_version
    )
    assert provider.sync_auth(provider_id, req.auth, dl()) is False
    rotated = _auth("Rotated-" + AUTH_SENTINEL)
    assert provider.sync_auth(provider_id, rotated, dl(), apply=False) is True
    assert req.auth.matches(
        base64.b64decode(core.read_namespaced_secret(name, namespace).data["passwd"]).decode()
    )
    assert provider.sync_auth(provider_id, rotated, dl()) is True
    assert rotated.matches(
        base64.b64decode(core.read_namespaced_secret(name, namespace).data["passwd"]).decode()
    )
    assert backend.pod(provider_id).metadata.uid == pod.metadata.uid, "rotated in place"
    assert provider.sync_auth(provider_id, rotated, dl()) is False
    with pytest.raises(ProviderError, match="created with auth; removing it needs a replacement") as caught:
        provider.sync_auth(provider_id, None, dl())
    assert errors.class_of(caught.value) == errors.PERMANENT
    output = backend.captured_output()
    assert AUTH_SENTINEL not in output and "Rotated-" not in output

    provider.delete(provider_id, dl())
    wait_gone(provider, provider_id, timeout=60)
    assert kube_testlib.wait_for("Secret removed", lambda: backend.leftovers(provider_id) == [], timeout=60)

    plain = backend.request(uid())
    plain_id = provider.create(plain, dl())
    wait_state(provider, plain_id, contract.RUNNING)
    with pytest.raises(ProviderError, match="created without auth; adding it needs a replacement"):
        provider.sync_auth(plain_id, _auth(AUTH_SENTINEL), dl())
    theirs = {"metadata": {"name": plain.name}, "stringData": {"passwd": "not ours"}}
    core.create_namespaced_secret(namespace, theirs)
    provider.delete(plain_id, dl())
    wait_gone(provider, plain_id, timeout=60)
    assert core.read_namespaced_secret(plain.name, namespace).string_data is None  # still there
    core.delete_namespaced_secret(plain.name, namespace)
