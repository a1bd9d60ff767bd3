"""Provider operations traced in the test process and exported over real OTLP/HTTP to
``otlp_receiver.Receiver``: what a collector would receive from one module run.

A process has one global tracer provider (OpenTelemetry sets it once), so ``exporting`` installs
an SDK provider the first time, whose span processor is switched per use: inside ``exporting``
spans go to a ``BatchSpanProcessor`` with the real ``OTLPSpanExporter`` pointed at the
receiver, outside they go nowhere. The root of each capture is ``tracing.module_span``, the
span a module run opens, so the providers' spans hang from exactly what they hang from in a
module. ``tree`` checks the shape: every span of the trace hangs from the root, parented as
named.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import uuid

from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otlp_receiver import Receiver

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import tracing

_lock = threading.Lock()


class _Switch(SpanProcessor):
    """Forwards to the processor of the capture in progress, if any."""

    def __init__(self):
        self.target = None

    def on_start(self, span, parent_context=None):
        target = self.target
        if target is not None:
            target.on_start(span, parent_context=parent_context)

    def on_end(self, span):
        target = self.target
        if target is not None:
            target.on_end(span)

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        target = self.target
        return True if target is None else target.force_flush(timeout_millis)


_switch = _Switch()


def _install() -> None:
    current = otel_trace.get_tracer_provider()
    if isinstance(current, TracerProvider) and _switch in current._active_span_processor._span_processors:
        return
    if not isinstance(current, otel_trace.ProxyTracerProvider):
        raise RuntimeError("another tracer provider is installed in this process: %r" % current)
    provider = TracerProvider(resource=Resource.create({"service.name": tracing.SERVICE_NAME}))
    provider.add_span_processor(_switch)
    otel_trace.set_tracer_provider(provider)


@contextlib.contextmanager
def exporting(module: str = "crawl.egress_proxies.proxy_instance"):
    """Yields ``(receiver, root)``: everything traced inside, under the module span ``root``,
    is exported to ``receiver`` (flushed before the block's end is left)."""
    with _lock:
        _install()
    with Receiver() as receiver:
        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint + "/v1/traces"))
        _switch.target = processor
        try:
            with tracing.module_span(module) as root:
                yield receiver, root
        finally:
            processor.force_flush()
            _switch.target = None
            processor.shutdown()


@contextlib.contextmanager
def recording():
    """Yields an in-memory exporter holding every span ended inside (the SDK's own spans, not
    decoded OTLP: for unit tests of what a span records)."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    with _lock:
        _install()
    exporter = InMemorySpanExporter()
    _switch.target = SimpleSpanProcessor(exporter)
    try:
        yield exporter
    finally:
        _switch.target = None


def children(spans: list, parent) -> list:
    return [s for s in spans if s.parent_id == parent.span_id and s.trace_id == parent.trace_id]


def check_tree(spans: list, root_name: str = "module.proxy_instance") -> dict:
    """The one root ``root_name`` and every other span hanging from a received span of its trace;
    returns ``{span_id: span}``."""
    roots = [s for s in spans if s.name == root_name]
    assert len(roots) == 1, [s.name for s in spans]
    by_id = {s.span_id: s for s in spans}
    for span in spans:
        assert span.trace_id == roots[0].trace_id, span
        assert span is roots[0] or span.parent_id in by_id, "orphan: %s" % (span,)
    return by_id


def under(by_id: dict, span) -> list:
    """The names from ``span`` up to the root."""
    names = []
    while span is not None:
        names.append(span.name)
        span = by_id.get(span.parent_id)
    return names


def assert_no_secret(receiver, *secrets: str) -> None:
    for body in receiver.bodies:
        for secret in secrets:
            assert secret.encode() not in body, "a secret reached the exported spans"


def render(spans: list) -> str:
    """The received tree as text, one span a line (failure messages, the docs' examples)."""
    by_parent = {}
    for span in spans:
        by_parent.setdefault(span.parent_id, []).append(span)
    ids = {s.span_id for s in spans}
    lines = []

    def walk(span, depth):
        keys = sorted(k for k in span.attributes if k != "duration_ms")
        lines.append("%s%s  %s" % ("  " * depth, span.name, ", ".join(keys)))
        for child in by_parent.get(span.span_id, []):
            walk(child, depth + 1)

    for root in [s for s in spans if s.parent_id not in ids]:
        walk(root, 0)
    return "\n".join(lines)


def secret_request(backend, auth: bool = True) -> tuple:
    """``(request, secrets)``: the harness's request with a cloud-init sentinel and, with
    ``auth``, a password sentinel; ``secrets`` is what no exported byte may hold."""
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    req = backend.request(str(uuid.uuid4()), cloud_init="#cloud-config\n# %s\n" % sentinel)
    secrets = [sentinel, "cloud-config"]
    if auth:
        password = "Pw-%s" % uuid.uuid4().hex
        req = dataclasses.replace(req, auth=Auth("crawler", password))
        secrets.append(password)
    return req, secrets
