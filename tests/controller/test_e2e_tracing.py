"""Tracing through the real controller: one create of a Proxy whose cloud-init comes from a
Secret, on the real test API server, run by ansible-runner on the local provider (real Squid),
with the standard OTEL_* variables pointing at a local OTLP/HTTP receiver.

The received tree is complete: ``reconcile`` (the provider group's step) -> ``runner.run`` ->
``module.proxy_instance`` (exported by the module's own process, continued from the run's
``TRACEPARENT``) -> ``provider.create`` -> ``squid.start`` (the backend call), and
``reconcile.apply`` for the Proxy's status write, all in one trace; the controller's log lines
written in those spans name their trace and span. No span body holds the Secret's content or
the controller's credentials.
"""

from __future__ import annotations

import uuid

import pytest
import yaml
from docs.trace_tree import assert_trace_as_drawn
from otlp_receiver import Receiver

from . import e2e_lib
from .test_e2e import E2E, _secret_with_sentinel

pytestmark = [pytest.mark.squid]

controller_api = e2e_lib.controller_api


@pytest.fixture
def traced(controller_api, kube_cluster, kube_namespace, tmp_path, monkeypatch):
    with Receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")  # export within a fraction of a second
        monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
        env = E2E(controller_api, kube_cluster, kube_namespace, tmp_path)
        env.controller.start()
        env.controller.wait_ready()
        try:
            yield env, receiver
        finally:
            env.cleanup()


def _children(spans, parent) -> list:
    return [s for s in spans if s.parent_id == parent.span_id and s.trace_id == parent.trace_id]


def test_one_create_is_one_complete_trace_without_secrets(traced):
    e2e, receiver = traced
    secret = "ci-%s" % uuid.uuid4().hex[:6]
    sentinel = _secret_with_sentinel(e2e, secret)
    name = "traced"
    e2e.create(name, {"provider": "local", "cloudInit": {"secretRef": {"name": secret, "key": "user-data"}}})
    e2e.wait_ready(name)

    def has_create_tree(spans) -> bool:
        """The create's spans up to the run's root: the Proxy is Ready from its item's streamed
        answer (the run follows the instance it made), before that run, its module and their
        spans have ended and been exported."""
        by_id = {s.span_id: s for s in spans}
        for create in (s for s in spans if s.name == "provider.create"):
            chain = [create]
            while chain[-1].parent_id in by_id:
                chain.append(by_id[chain[-1].parent_id])
            if chain[-1].parent_id == "" and chain[-1].name == "reconcile":
                return any(
                    s.name == "reconcile.apply" and s.attributes.get("proxy.op") == "create" for s in spans
                )
        return False

    receiver.wait_for(has_create_tree, "the create's spans")
    spans = list(receiver.spans)
    create = [s for s in spans if s.name == "provider.create"]
    assert len(create) == 1, create
    by_id = {s.span_id: s for s in spans}
    module = by_id[create[0].parent_id]
    run = by_id[module.parent_id]
    step = by_id[run.parent_id]
    assert (module.name, run.name, step.name) == ("module.proxy_instance", "runner.run", "reconcile")
    assert step.parent_id == ""  # the root
    assert module.service == "crawl.egress_proxies" and run.service == "egress-proxies-controller"
    assert step.attributes["proxy.provider"] == "local" and "create" in step.attributes["proxy.ops"]
    assert run.attributes["runner.status"] == "successful"
    applies = [s for s in _children(spans, step) if s.name == "reconcile.apply"]
    key = "%s/%s" % (e2e.namespace, name)
    assert [(a.attributes["proxy.key"], a.attributes["proxy.outcome"]) for a in applies] == [(key, "ok")]
    # Every span of the trace hangs from the root: nothing orphaned, nothing left out.
    trace = [s for s in spans if s.trace_id == step.trace_id]
    for span in trace:
        assert span is step or span.parent_id in by_id, span
    assert {s.name for s in _children(spans, module)} >= {"provider.create"}
    # Under the provider call, its calls into the backend (the local provider: Squid's process).
    assert "squid.start" in {s.name for s in _children(spans, create[0])}
    assert_trace_as_drawn("docs/controller.md", "reconcile.apply", trace)  # the page's tree
    # The controller's log lines written in the reconcile's spans name them (--log-format text).
    lines = e2e.controller.log_lines("trace_id=%s" % step.trace_id)
    assert lines, "no controller log line names the create's trace"
    for line in lines:
        span_id = line.rsplit("span_id=", 1)[1].split()[0]
        assert span_id in by_id and by_id[span_id].service == "egress-proxies-controller", line
    with open(e2e.kubeconfig) as handle:
        token = yaml.safe_load(handle)["users"][0]["user"]["token"]
    for body in receiver.bodies:
        assert sentinel.encode() not in body
        assert token.encode() not in body
        assert b"cloud-config" not in body
