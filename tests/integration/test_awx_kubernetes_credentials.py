"""The kubernetes provider with the credentials AWX gives a job, against the real test control
plane: the built-in "OpenShift or Kubernetes API Bearer Token" credential (exactly the
``K8S_AUTH_*`` variables AWX's injector sets, with and without its CA) and the shipped
"Egress proxies kubeconfig" type (K8S_AUTH_KUBECONFIG), each beside the shipped providers
credential whose kubernetes block names no cluster. Real ``ansible-playbook`` runs of
proxy_check, proxy_instance and proxy_info as a least-privilege ServiceAccount; the token never
appears in the output, also at -vvvv and also when a block is refused.
"""

from __future__ import annotations

import uuid

import pytest
import yaml
from cluster import kube_testlib
from kubernetes import client as k8s

from . import awx_injection
from .playbook import run_playbook
from .test_awx_credential_types import load

pytestmark = pytest.mark.playbook

PI = "crawl.egress_proxies.proxy_instance"
INFO = "crawl.egress_proxies.proxy_info"
CHECK = "crawl.egress_proxies.proxy_check"


@pytest.fixture
def identity(kube_cluster, kube_admin, kube_namespace, tmp_path):
    """The namespace's least-privilege provider identity; no managed Pod of it left behind."""
    ident = kube_testlib.ProviderIdentity(
        kube_admin, kube_cluster.server, kube_cluster.pki["ca_crt"], kube_namespace, str(tmp_path)
    )
    try:
        yield ident
    finally:
        core = k8s.CoreV1Api(kube_admin)
        left = [p.metadata.name for p in core.list_namespaced_pod(kube_namespace).items]
        for name in left:
            core.delete_namespaced_pod(name, kube_namespace, grace_period_seconds=0)
        ident.close()
        assert left == [], "pods left behind: %s" % left


def providers_env(tmp_path, namespace: str, installation: str) -> dict:
    """The shipped providers credential with a kubernetes block naming only its namespace."""
    providers = {
        "installation": installation,
        "providers": [{"name": "k8s", "type": "kubernetes", "kubernetes": {"namespace": namespace}}],
    }
    env, _extra, _files = awx_injection.inject(
        load("egress_proxies_providers.yml"),
        {"providers_yaml": yaml.safe_dump(providers)},
        str(tmp_path / "job"),
    )
    return env


def bearer_env(tmp_path, kube_cluster, identity, verify: bool) -> dict:
    inputs = {"host": kube_cluster.server, "bearer_token": identity.token, "verify_ssl": verify}
    if verify:
        with open(kube_cluster.pki["ca_crt"], encoding="utf-8") as handle:
            inputs["ssl_ca_cert"] = handle.read()
    return awx_injection.kubernetes_bearer_token(inputs, str(tmp_path / "job"))


def assert_check_ready(run, identity) -> None:
    assert run.rc == 0, run.stdout[-3000:]
    (provider,) = run["check"]["providers"]
    (target,) = provider["targets"]
    assert target["target"] == "apiserver" and target["ready"] is True, target
    assert target["details"]["user"] == identity.user


def test_the_bearer_token_credential_runs_check_and_a_lifecycle(
    tmp_path, kube_cluster, kube_namespace, identity
):
    env = bearer_env(tmp_path, kube_cluster, identity, verify=True)
    assert set(env) == {"K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_VERIFY_SSL", "K8S_AUTH_SSL_CA_CERT"}
    env.update(providers_env(tmp_path, kube_namespace, "awx-%s" % uuid.uuid4().hex[:8]))
    uid = str(uuid.uuid4())
    tasks = [
        {"name": "check", CHECK: {}},
        {"name": "create", PI: {"provider": "k8s", "uid": uid, "wait": True, "wait_timeout": 60}},
        {"name": "info", INFO: {}},
    ]
    run = run_playbook(tmp_path, tasks, env=env, verbosity=4)
    assert identity.token not in run.stdout + run.stderr
    assert_check_ready(run, identity)
    created = run["create"]["instance"]
    assert created["state"] == "Running" and created["id"].startswith(kube_namespace + "/")
    assert [i["id"] for i in run["info"]["instances"]] == [created["id"]]

    delete = {"provider": "k8s", "id": created["id"], "state": "absent", "wait": True}
    tasks = [{"name": "delete", PI: delete}]
    run = run_playbook(tmp_path, tasks, env=env)
    assert run.rc == 0, run.stdout[-3000:]
    assert run["delete"]["changed"] is True


def test_the_bearer_token_credential_without_a_ca_turns_verification_off(
    tmp_path, kube_cluster, kube_namespace, identity
):
    env = bearer_env(tmp_path, kube_cluster, identity, verify=False)
    assert env["K8S_AUTH_VERIFY_SSL"] == "False" and "K8S_AUTH_SSL_CA_CERT" not in env
    env.update(providers_env(tmp_path, kube_namespace, "awx-noca"))
    assert_check_ready(run_playbook(tmp_path, [{"name": "check", CHECK: {}}], env=env), identity)


def test_a_wrong_ca_is_refused_by_tls_not_ignored(tmp_path, kube_cluster, kube_namespace, identity):
    """Verification really is on when AWX says True: another CA than the server's fails."""
    env = bearer_env(tmp_path, kube_cluster, identity, verify=True)
    other = tmp_path / "other-ca.crt"
    other.write_text(_self_signed_ca())
    env["K8S_AUTH_SSL_CA_CERT"] = str(other)
    env.update(providers_env(tmp_path, kube_namespace, "awx-badca"))
    run = run_playbook(tmp_path, [{"name": "check", CHECK: {}}], env=env)
    ((target,),) = [p["targets"] for p in run["check"]["providers"]]
    assert target["ready"] is False and "certificate verify failed" in target["message"].lower(), target
    assert identity.token not in run.stdout + run.stderr


def test_the_kubeconfig_credential_type_is_read_through_k8s_auth_kubeconfig(
    tmp_path, kube_namespace, identity
):
    with open(identity.kubeconfig, encoding="utf-8") as handle:
        env, _extra, _files = awx_injection.inject(
            load("egress_proxies_kubeconfig.yml"),
            {"kubeconfig": handle.read(), "context": "provider"},
            str(tmp_path / "job"),
        )
    assert set(env) == {"K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT"}
    env.update(providers_env(tmp_path, kube_namespace, "awx-kubeconfig"))
    assert_check_ready(run_playbook(tmp_path, [{"name": "check", CHECK: {}}], env=env), identity)


def test_a_token_written_inline_is_never_echoed(tmp_path, kube_cluster, kube_namespace, identity):
    """An apiKey in the inline providers option is masked in the result (invocation included),
    whether the block is accepted or refused."""
    block = {"namespace": kube_namespace, "host": kube_cluster.server, "apiKey": identity.token}
    good = dict(block, caCert=kube_cluster.pki["ca_crt"])
    bad = dict(block, caCert="relative/ca.crt")
    tasks = [
        {"name": "check", CHECK: {"providers": [{"name": "k8s", "type": "kubernetes", "kubernetes": good}]}},
        {
            "name": "refused",
            CHECK: {"providers": [{"name": "k8s", "type": "kubernetes", "kubernetes": bad}]},
            "ignore_errors": True,
        },
    ]
    run = run_playbook(tmp_path, tasks, verbosity=4)
    assert identity.token not in run.stdout + run.stderr
    assert_check_ready(run, identity)
    assert "providers[0].kubernetes.caCert: must be an absolute path" in run["refused"]["msg"]


def _self_signed_ca() -> str:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not-the-cluster-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()
