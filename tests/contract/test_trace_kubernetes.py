"""The kubernetes provider's trace against the real test API server, exported over OTLP/HTTP
and decoded as a collector would (trace_capture.py): each ``provider.<op>`` holds one
``k8s.<METHOD>`` span per API request, through the one client transport the provider builds
(kubernetes/traced_pool.py), with the path's identifiers and the HTTP status. The password,
the cloud-init and the provider's bearer token (sentinels) appear in no exported byte."""

from __future__ import annotations

import time

from docs.trace_tree import assert_trace_as_drawn
from trace_capture import assert_no_secret, check_tree, children, exporting, render, secret_request

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from contract.kubernetes_backend import kubernetes_backend
from contract.suite import cleanup, dl

backend = kubernetes_backend


def _gone(provider, provider_id: str, backend, timeout: float = 30.0) -> bool:
    """Read the deleted Pod until the API server answers 404: kwok finishes a deletion on its
    own time (a Pod with a deletionTimestamp is still read back for a moment, more so under
    load), so the first read after ``delete`` may still find it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            provider.get(provider_id, dl(backend))
        except errors.ProviderError as exc:
            assert exc.error_class == errors.NOT_FOUND, exc
            return True
        time.sleep(0.2)
    return False


def test_create_get_delete_hold_one_span_per_api_request(backend):
    req, secrets = secret_request(backend)
    provider = backend.provider
    with exporting() as (receiver, _root), cleanup(backend) as ids:
        provider_id = provider.create(req, dl(backend))
        ids.append(provider_id)
        provider.get(provider_id, dl(backend))
        provider.delete(provider_id, dl(backend))
        ids.remove(provider_id)
        assert _gone(provider, provider_id, backend)  # a 404: an answer, with its status
    spans = list(receiver.spans)
    print(render(spans))
    by_id = check_tree(spans)
    assert_trace_as_drawn("docs/kubernetes-provider.md", "k8s.POST", spans)  # the page's tree is this trace
    namespace, name = provider_id.split("/")
    for op in [s for s in spans if s.name.startswith("provider.")]:
        assert by_id[op.parent_id].name == "module.proxy_instance"
        requests = children(spans, op)
        assert requests, "%s made no API request span" % op.name
        for call in requests:
            assert call.name == "k8s.%s" % call.attributes["http.request.method"]
            assert call.attributes["server.address"] == "127.0.0.1"
            assert call.attributes["url.path"].startswith("/api")
            assert call.attributes["http.request.resend_count"] == 0
            assert call.attributes["duration_ms"] > 0
    requests = {
        (op.name, c.name, c.attributes.get("k8s.resource"), c.attributes.get("k8s.name"))
        for op in spans
        if op.name.startswith("provider.")
        for c in children(spans, op)
    }
    assert ("provider.create", "k8s.POST", "pods", None) in requests
    assert ("provider.get", "k8s.GET", "pods", name) in requests
    assert ("provider.delete", "k8s.DELETE", "pods", name) in requests
    pod_calls = [s for s in spans if s.attributes.get("k8s.name") == name]
    assert {s.attributes["k8s.namespace"] for s in pod_calls} == {namespace}
    statuses = [s.attributes["http.response.status_code"] for s in spans if s.name == "k8s.GET"]
    assert 200 in statuses and 404 in statuses
    assert_no_secret(receiver, backend.identity.token, *secrets)
