# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Tracing of one module run: the span every provider call of the run is a child of.

A module is its own short-lived process, so it exports its own spans. It follows the standard
OpenTelemetry environment: spans are exported over OTLP/HTTP (protobuf) only when
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, never when
``OTEL_SDK_DISABLED`` is true or ``OTEL_TRACES_EXPORTER`` is ``none``; the parent is the W3C
trace context in ``TRACEPARENT`` (and ``TRACESTATE``), which the controller sets for each runner
run and a playbook user may set too. Without the OpenTelemetry SDK and exporter installed (the
controller image and the execution environment have them; the modules' core requirements have
only the API) nothing is exported, and without the API nothing is traced at all.

Provider calls may run on worker threads (batch items, abandonable calls), where the current
context is empty: ``parent()`` gives them the run's span instead.
"""

from __future__ import annotations

import contextlib
import os

try:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate
    from opentelemetry import trace as otel_trace
except ImportError:  # the API is optional: no tracing without it
    otel_trace = None

SERVICE_NAME = "crawl.egress_proxies"
ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_state = {"context": None}


def export_wanted(environ=None) -> bool:
    """What the standard variables ask for: an OTLP endpoint, the SDK and the exporter enabled."""
    environ = os.environ if environ is None else environ
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = [e.strip().lower() for e in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    if "otlp" not in exporters:
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARS)


def otlp_protocol(environ=None) -> str:
    """The OTLP protocol the variables ask for; only ``http/protobuf`` is supported (the OTLP/HTTP
    exporter is the one installed)."""
    environ = os.environ if environ is None else environ
    protocol = environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    )
    return protocol.strip()


def otlp_provider(service_name: str, attributes=None, environ=None):
    """A tracer provider exporting over OTLP/HTTP (the exporter reads its own OTEL_EXPORTER_OTLP_*
    settings), named ``service_name`` unless ``OTEL_SERVICE_NAME`` or ``OTEL_RESOURCE_ATTRIBUTES``
    name the service. Not installed here; ``ImportError`` without the SDK and its exporter. The
    module runs and the controller (its ``tracing.configure``) both export through this."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:  # the callers export nothing then
        raise ImportError("the OpenTelemetry SDK or its OTLP/HTTP exporter is missing: %s" % exc) from None

    environ = os.environ if environ is None else environ
    attributes = dict(attributes or {})
    if not environ.get("OTEL_SERVICE_NAME") and "service.name=" not in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    ):
        attributes["service.name"] = service_name
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def _configure():
    """A tracer provider exporting to the configured endpoint, or ``None`` (nothing to export,
    the SDK missing, or a provider set already by whoever imported us)."""
    if not export_wanted() or otlp_protocol() != "http/protobuf":
        return None
    if not isinstance(otel_trace.get_tracer_provider(), otel_trace.ProxyTracerProvider):
        return None
    try:
        provider = otlp_provider(SERVICE_NAME)
    except ImportError:
        return None
    otel_trace.set_tracer_provider(provider)
    return provider


def _incoming():
    """The W3C trace context handed down in the environment (the controller's run span)."""
    carrier = {}
    for key in ("traceparent", "tracestate"):
        value = os.environ.get(key.upper())
        if value:
            carrier[key] = value
    return propagate.extract(carrier) if carrier else None


@contextlib.contextmanager
def module_span(module_name: str):
    """The span ``module.<short name>`` (the FQCN in ``ansible.module``) around a whole module
    run, exported before the process exits (``exit_json`` raises ``SystemExit`` through here)."""
    if otel_trace is None:
        yield None
        return
    provider = _configure()
    tracer = otel_trace.get_tracer(SERVICE_NAME)
    try:
        with tracer.start_as_current_span(
            "module.%s" % module_name.rsplit(".", 1)[-1],
            context=_incoming(),
            attributes={"ansible.module": module_name},
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            _state["context"] = otel_context.get_current()
            try:
                yield span
            except SystemExit as exc:  # exit_json: 0; fail_json: 1
                if exc.code not in (0, None):
                    set_error(span, "failed")
                raise
            finally:
                _state["context"] = None
    finally:
        if provider is not None:
            provider.shutdown()  # flushes: the process ends right after


def set_error(span, description: str) -> None:
    """Mark ``span`` failed with ``description`` (an error class: never a message); a span
    exists only when the guarded API import above succeeded."""
    span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, description))


def parent():
    """The context a provider call's span starts in: the current one when it holds a span
    (the call runs on the module's thread), else the module run's."""
    if otel_trace is None:
        return None
    if otel_trace.get_current_span().get_span_context().is_valid:
        return None
    return _state["context"]


def log_ids() -> tuple:
    """``(trace_id, span_id)`` of the current span in hex, as collectors show them, or
    ``("", "")`` outside any span: what a log line written now carries (the modules' debug log,
    the controller's log)."""
    if otel_trace is None:
        return "", ""
    context = otel_trace.get_current_span().get_span_context()
    if not context.is_valid:
        return "", ""
    return format(context.trace_id, "032x"), format(context.span_id, "016x")
