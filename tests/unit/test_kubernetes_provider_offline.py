"""The kubernetes provider's behaviour that needs no cluster: requests it refuses before any
call, and a kubeconfig that cannot be read (Permanent, with the configured provider name)."""

from __future__ import annotations

import functools
import json
import time

import pytest
from fakes.not_found_server import NotFoundServer, write_kubeconfig

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ProviderError


def provider(tmp_path, **block):
    block.setdefault("kubeconfig", str(tmp_path / "missing.kubeconfig"))
    parsed = config.parse({"providers": [{"name": "k8s-eu", "type": "kubernetes", "kubernetes": block}]})
    return registry.build(parsed.providers[0], parsed.installation)


def raised(call) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        call()
    return caught.value


def test_missing_kubeconfig_is_transient_with_the_configured_name(tmp_path):
    """Issue 15: one rule for credential files (helpers/credential_files.py): missing is Transient (a
    Secret may still be mounting); a kubeconfig that reads but is broken is Permanent (below)."""
    p = provider(tmp_path)
    # 30 s, not 5: the first kubeconfig load of a process imports the client's config modules,
    # which took longer than 5 s on a loaded machine (the answer itself comes at once).
    for op, call in (
        ("get", lambda: p.get("crawl/proxy-aaaaaaaaaaaaaaaa", Deadline(30))),
        ("delete", lambda: p.delete("crawl/proxy-aaaaaaaaaaaaaaaa", Deadline(30))),
        ("list", lambda: p.list_by_tag(Deadline(30))),
        ("create", lambda: p.create(contract.CreateRequest(name="proxy-a", uid="u"), Deadline(30))),
    ):
        err = raised(call)
        assert (err.error_class, err.op, err.provider_name) == (errors.TRANSIENT, op, "k8s-eu"), err
        assert "missing.kubeconfig" in str(err)


def test_broken_kubeconfig_is_permanent(tmp_path):
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    err = raised(lambda: provider(tmp_path, kubeconfig=str(broken)).get("crawl/proxy-a", Deadline(5)))
    assert err.error_class == errors.PERMANENT and "broken.kubeconfig" in str(err), err


@pytest.mark.parametrize(
    ("req", "message"),
    [
        (contract.CreateRequest(name="Proxy_A", uid="u"), "not a DNS label"),
        (contract.CreateRequest(name="proxy-a", uid=""), "uid is required"),
        (contract.CreateRequest(name="proxy-a", uid="u", port=0), "port 0"),
        (contract.CreateRequest(name="proxy-a", uid="u", port=70000), "port 70000"),
        (contract.CreateRequest(name="proxy-a", uid="u", namespace="Bad_NS"), "namespace 'Bad_NS'"),
    ],
)
def test_impossible_requests_are_refused_before_any_call(tmp_path, req, message):
    err = raised(lambda: provider(tmp_path).create(req, Deadline(5)))
    assert err.error_class == errors.PERMANENT and message in str(err), err


def test_expired_deadline_is_transient_never_not_found(tmp_path, monkeypatch):
    # A readable kubeconfig but a deadline already gone: no call is made, the answer is Transient.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    p = provider(tmp_path, kubeconfig=str(kubeconfig))
    err = raised(lambda: p.get("crawl/proxy-aaaaaaaaaaaaaaaa", Deadline(0)))
    assert err.error_class == errors.TRANSIENT
    p.close()
    p.close()  # closing twice is harmless


def _status(kind: str, name: str) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "NotFound",
            "message": '%s "%s" not found' % (kind, name),
            "details": {"name": name, "kind": kind},
            "code": 404,
        }
    ).encode()


def _against(tmp_path, body: bytes):
    server = NotFoundServer(body, "application/json")
    path = str(tmp_path / "kubeconfig")
    write_kubeconfig(path, server.endpoint)
    return server, provider(tmp_path, kubeconfig=path)


def test_not_found_with_the_api_servers_proof_is_not_found(tmp_path):
    server, p = _against(tmp_path, _status("pods", "proxy-a"))
    try:
        assert raised(lambda: p.get("crawl/proxy-a", Deadline(5))).error_class == errors.NOT_FOUND
    finally:
        server.close()


def test_create_into_a_missing_namespace_is_permanent(tmp_path):
    """Issue 15: it was not_found, which a caller reads as "the instance is gone"."""
    server, p = _against(tmp_path, _status("namespaces", "crawl"))
    try:
        req = contract.CreateRequest(name="proxy-a", uid="u", namespace="crawl")
        assert raised(lambda: p.create(req, Deadline(5))).error_class == errors.PERMANENT
        assert raised(lambda: p.get("crawl/proxy-a", Deadline(5))).error_class == errors.TRANSIENT
        assert raised(lambda: p.list_by_tag(Deadline(5))).error_class == errors.TRANSIENT
    finally:
        server.close()


def test_a_forbidden_names_what_grants_the_providers_rights(tmp_path):
    """Issue 37: the default install's Proxy ended PermanentError "cannot get resource pods" and
    nothing named the overlay that grants the rights."""
    body = json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "Forbidden",
            "message": 'pods "proxy-a" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource'
            ' "pods"',
            "details": {"name": "proxy-a", "kind": "pods"},
            "code": 403,
        }
    ).encode()
    server = NotFoundServer(body, "application/json", status=403)
    path = str(tmp_path / "kubeconfig")
    write_kubeconfig(path, server.endpoint)
    p = provider(tmp_path, kubeconfig=path)
    try:
        err = raised(lambda: p.get("crawl/proxy-a", Deadline(5)))
    finally:
        server.close()
    assert err.error_class == errors.PERMANENT
    assert 'cannot get resource "pods"' in str(err)
    assert "controller/config/with-kubernetes-provider" in str(err)
    assert "controller_kubernetes_provider_rbac" in str(err)


def test_a_hanging_exec_credential_plugin_is_bounded_by_the_deadline(tmp_path):
    """Issue 15: loading the kubeconfig runs its exec plugin with no timeout of its own; a plugin
    that hangs held the call (and the batch worker) forever. It is abandoned at the deadline."""
    plugin = tmp_path / "hang.sh"
    plugin.write_text("#!/bin/sh\nexec sleep 60\n")
    plugin.chmod(0o755)
    kubeconfig = tmp_path / "exec.kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: '%s'}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n" % plugin
    )
    p = provider(tmp_path, kubeconfig=str(kubeconfig))
    started = time.monotonic()
    err = raised(lambda: p.get("crawl/proxy-a", Deadline(1)))
    assert time.monotonic() - started < 5, "the exec plugin held the call"
    assert err.error_class == errors.TRANSIENT, err


ANSWERS_NOT_A_POD = {
    "html page": (b"<html><body><h1>Welcome</h1></body></html>", "text/html"),
    "truncated json": (b'{"kind": "Pod", "metadata": {"name": "proxy-a", "labels": {', "application/json"),
    "json of another kind": (
        json.dumps({"kind": "Status", "status": "Success"}).encode(),
        "application/json",
    ),
    "json that is no object": (b'["Pod"]', "application/json"),
}


@pytest.mark.parametrize("answer", sorted(ANSWERS_NOT_A_POD))
def test_a_200_that_is_not_the_object_asked_for_is_transient_never_an_instance(tmp_path, answer):
    """The hot paths read the API's JSON themselves (helpers/kube_answers.py): a 200 from something in front
    of the API server is neither an instance, an empty list, nor a create that happened."""
    body, content_type = ANSWERS_NOT_A_POD[answer]
    server = NotFoundServer(body, content_type, status=200)
    path = str(tmp_path / "kubeconfig")
    write_kubeconfig(path, server.endpoint)
    p = provider(tmp_path, kubeconfig=path)
    try:
        for call in (
            lambda: p.get("crawl/proxy-a", Deadline(5)),
            lambda: p.list_by_tag(Deadline(5)),
            lambda: p.create(contract.CreateRequest(name="proxy-a", uid="u", namespace="crawl"), Deadline(5)),
        ):
            err = raised(call)
            assert err.error_class == errors.TRANSIENT, err
            assert "expected" in str(err)
        assert [method for method, _path in server.requests] == ["GET", "GET", "POST"]
    finally:
        server.close()


def _pod_answer(name: str, namespace: str) -> bytes:
    meta = {"labels": {"proxy-operator-managed": "true", "proxy-operator-installation": "default"}}
    meta.update({k: v for k, v in (("name", name), ("namespace", namespace)) if v})
    return json.dumps({"kind": "Pod", "metadata": meta, "status": {"phase": "Running"}}).encode()


def test_a_pod_answer_about_another_pod_is_transient_and_deletes_nothing(tmp_path):
    """Issue 28 §5 on the kubernetes provider: a 200 Pod whose name or namespace is not the one
    asked for (or has none) was read as the instance asked for, and delete went on to send a
    DELETE after checking that other Pod's marks. Now it is Transient, and nothing is deleted."""
    calls = (
        lambda q: q.get("crawl/proxy-a", Deadline(5)),
        lambda q: q.delete("crawl/proxy-a", Deadline(5)),
        lambda q: q.create(contract.CreateRequest(name="proxy-a", uid="u", namespace="crawl"), Deadline(5)),
    )
    for body in (
        _pod_answer("proxy-other", "crawl"),
        _pod_answer("proxy-a", "elsewhere"),
        _pod_answer("", ""),
    ):
        server = NotFoundServer(body, "application/json", status=200)
        path = str(tmp_path / "kubeconfig")
        write_kubeconfig(path, server.endpoint)
        p = provider(tmp_path, kubeconfig=path)
        try:
            for call in calls:
                err = raised(functools.partial(call, p))
                assert err.error_class == errors.TRANSIENT, err
                assert "where crawl/proxy-a was asked for" in str(err), err
            assert [method for method, _path in server.requests] == ["GET", "GET", "POST"], body
        finally:
            server.close()
