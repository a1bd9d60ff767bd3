"""OpenTelemetry tracing for the controller, configured the way OpenTelemetry users expect.

The standard variables decide: with ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_ENDPOINT`` set, spans are exported over OTLP/HTTP (protobuf; the exporter
reads its own ``OTEL_EXPORTER_OTLP_*`` settings: headers, timeout, compression, certificates);
without one, or with ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``, nothing is set
up and every span is a no-op. ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` name the
service (default ``egress-proxies-controller``, with the package's version).

Each runner run hands its span's W3C trace context to the modules as ``TRACEPARENT`` (and
``TRACESTATE``) in the run's environment, with the OTEL_* variables inherited: the modules
(plugins/module_utils/tracing.py) export their spans as children of the run.
"""

from __future__ import annotations

import logging
import os

from opentelemetry import propagate
from opentelemetry import trace as otel_trace

from .version import PRODUCT, package_version

log = logging.getLogger("egress_proxies_controller.tracing")
ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
SCOPE = "egress_proxies_controller"


def export_wanted(environ=None) -> bool:
    """An OTLP endpoint is set and neither the SDK nor the traces exporter is switched off."""
    environ = os.environ if environ is None else environ
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = [e.strip().lower() for e in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    if "otlp" not in exporters:
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARS)


def configure(environ=None):
    """Install the exporting tracer provider when the variables ask for one; returns it (call
    ``shutdown()`` at exit: it flushes) or ``None``."""
    environ = os.environ if environ is None else environ
    if not export_wanted(environ):
        return None
    protocol = environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    )
    if protocol.strip() != "http/protobuf":
        log.error("tracing off: OTLP protocol %r is not supported (only http/protobuf)", protocol)
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attributes = {"service.version": package_version()}
    if not environ.get("OTEL_SERVICE_NAME") and "service.name=" not in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    ):
        attributes["service.name"] = PRODUCT
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    otel_trace.set_tracer_provider(provider)
    log.info("tracing: exporting spans over OTLP/HTTP")
    return provider


def tracer():
    return otel_trace.get_tracer(SCOPE, package_version())


def run_environment() -> dict:
    """The current span's W3C trace context as the run's environment variables (empty when no
    span is recording: nothing to continue)."""
    carrier = {}
    propagate.inject(carrier)
    return {key.upper(): carrier[key] for key in ("traceparent", "tracestate") if carrier.get(key)}
