"""OpenTelemetry tracing for the controller, configured the way OpenTelemetry users expect.

The standard variables decide: with ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_ENDPOINT`` set, spans are exported over OTLP/HTTP (protobuf; the exporter
reads its own ``OTEL_EXPORTER_OTLP_*`` settings: headers, timeout, compression, certificates);
without one, or with ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``, nothing is set
up and every span is a no-op. ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` name the
service (default ``egress-proxies-controller``, with the package's version).

Each runner run hands its span's W3C trace context to the modules as ``TRACEPARENT`` (and
``TRACESTATE``) in the run's environment, with the OTEL_* variables inherited: the modules
(plugins/module_utils/telemetry/tracing.py) export their spans as children of the run. Which variables
turn export on, the protocol and the exporting provider are that file's (``export_wanted``,
``otlp_protocol``, ``otlp_provider``): the controller and the modules read them by one rule.
"""

from __future__ import annotations

import logging
import os

from opentelemetry import context as otel_context
from opentelemetry import propagate
from opentelemetry import trace as otel_trace

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import
from ..version import PRODUCT, package_version

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.tracing import (
    export_wanted,
    otlp_protocol,
    otlp_provider,
)

log = logging.getLogger("egress_proxies_controller.telemetry.tracing")
SCOPE = "egress_proxies_controller"


def configure(environ=None):
    """Install the exporting tracer provider when the variables ask for one; returns it (call
    ``shutdown()`` at exit: it flushes) or ``None``."""
    environ = os.environ if environ is None else environ
    if not export_wanted(environ):
        return None
    protocol = otlp_protocol(environ)
    if protocol != "http/protobuf":
        log.error("tracing off: OTLP protocol %r is not supported (only http/protobuf)", protocol)
        return None
    provider = otlp_provider(PRODUCT, {"service.version": package_version()}, environ)
    otel_trace.set_tracer_provider(provider)
    log.info("tracing: exporting spans over OTLP/HTTP")
    return provider


def tracer():
    return otel_trace.get_tracer(SCOPE, package_version())


def current_context():
    """The current span's context, to continue its trace on another thread (a Proxy's answer
    written by a later reconcile is a child of the run that answered it)."""
    return otel_context.get_current()


def run_environment() -> dict:
    """The current span's W3C trace context as the run's environment variables (empty when no
    span is recording: nothing to continue)."""
    carrier = {}
    propagate.inject(carrier)
    return {key.upper(): carrier[key] for key in ("traceparent", "tracestate") if carrier.get(key)}
