"""``backend_call``, the child span of one backend call: opened only under a recording parent,
a failure recorded by its type and never its message, the caller's span kept across
``abandon.run``'s worker thread; and what the kubernetes and gcp seams put on it."""

from __future__ import annotations

import types

import pytest
from opentelemetry import trace as otel_trace
from trace_capture import recording

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import abandon
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import api
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import traced_pool
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import tracing
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.backend_spans import (
    NO_SPAN,
    backend_call,
)

TRACER = "crawl.egress_proxies"


def test_no_span_without_a_recording_parent():
    with recording() as exporter, backend_call("squid.start", {"local.instance": "a"}) as span:
        assert span is NO_SPAN
    assert exporter.get_finished_spans() == ()


def test_a_failure_is_its_type_never_its_message():
    define = backend_call("libvirt.domain_define", {"libvirt.args": "<9 chars>"})
    with (
        recording() as exporter,
        otel_trace.get_tracer(TRACER).start_as_current_span("provider.create"),
        pytest.raises(ValueError),
        define,
    ):
        raise ValueError("SENTINEL the XML that was sent")
    (call, _op) = exporter.get_finished_spans()
    assert call.attributes["error.type"] == "ValueError" and call.status.description == "ValueError"
    assert call.attributes["duration_ms"] >= 0 and call.events == ()
    assert "SENTINEL" not in repr(dict(call.attributes)) + repr(call.status)


def test_a_call_in_abandon_runs_worker_belongs_to_the_callers_span():
    def work():
        with backend_call("gcp.instances.get"):
            return tracing.log_ids()

    with recording() as exporter, otel_trace.get_tracer(TRACER).start_as_current_span("provider.get") as op:
        trace_id, span_id = abandon.run(work, (), 5, Deadline(5), "get")
    (call, _op) = exporter.get_finished_spans()
    assert call.parent.span_id == op.get_span_context().span_id
    assert (trace_id, span_id) == (
        format(call.context.trace_id, "032x"),
        format(call.context.span_id, "016x"),
    )


def test_a_kubernetes_request_span_names_path_identifiers_not_credentials_or_query():
    attributes = traced_pool.request_attributes(
        "get", "https://user:SENTINEL@10.0.0.1:6443/api/v1/namespaces/ns/pods/p1?labelSelector=a%3Db"
    )
    assert attributes == {
        "http.request.method": "GET",
        "server.address": "10.0.0.1",
        "server.port": 6443,
        "url.path": "/api/v1/namespaces/ns/pods/p1",
        "k8s.namespace": "ns",
        "k8s.resource": "pods",
        "k8s.name": "p1",
        "k8s.subresource": None,
    }


def test_a_client_without_the_public_pool_manager_is_left_as_it_is():
    client = types.SimpleNamespace(rest_client=types.SimpleNamespace())
    assert traced_pool.trace_requests(client) is False
    assert vars(client.rest_client) == {}


def test_a_gcp_span_never_takes_a_request_body():
    rpc, attributes = api.rpc_attributes("insert_instance", ("us-central1-a", {"metadata": "SENTINEL"}))
    assert (rpc, attributes) == (
        "instances.insert",
        {"gcp.rpc": "instances.insert", "gcp.zone": "us-central1-a"},
    )
    rpc, attributes = api.rpc_attributes("patch_firewall", ("fw", {"sourceRanges": ["SENTINEL"]}))
    assert attributes == {"gcp.rpc": "firewalls.patch", "gcp.firewall": "fw"}
