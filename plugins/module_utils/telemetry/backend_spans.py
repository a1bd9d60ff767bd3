# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""One child span per backend call, under the provider operation's span (``provider.<op>``).

The reference's second layer of observability: each provider opens these at its one seam (the
kubernetes client's connection pool, the gcp adapter's call wrapper, the libvirt guard and
dialer, the local provider's Squid process calls), never per call site. Parent-gated: without a
recording span to hang from (the current one, or the module run's for worker threads), nothing
is opened, so a provider used outside a traced operation makes no orphan roots.

Callers pass identifiers only (method, names, zone, host, status). The span records an error
as its type name and the caller's fields (a libvirt code, an HTTP status), never an exception's
message, a request body or a URL with credentials: messages can quote what a backend was sent.
"""

from __future__ import annotations

import contextlib
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import tracing

try:
    from opentelemetry import trace as otel_trace
except ImportError:  # the API is optional: no tracing without it
    otel_trace = None


class _NoSpan:
    """What a caller gets when nothing is traced: attributes go nowhere."""

    def set_attribute(self, key: str, value) -> None:
        pass

    def is_recording(self) -> bool:
        return False


NO_SPAN = _NoSpan()


def _parent_context():
    """``(wanted, context)``: a span only under a recording parent (see the module docstring)."""
    if otel_trace.get_current_span().is_recording():
        return True, None
    context = tracing.parent()
    if context is None:
        return False, None
    return otel_trace.get_current_span(context).is_recording(), context


@contextlib.contextmanager
def backend_call(name: str, attributes: dict | None = None):
    """The span ``name`` around one backend call; yields it (or ``NO_SPAN``) so the caller can
    add what only the answer tells (a status, a byte count). ``duration_ms`` is set on exit
    (the log lines carry the same figure); a failure adds ``error.type`` and status ERROR."""
    if otel_trace is None:
        yield NO_SPAN
        return
    wanted, context = _parent_context()
    if not wanted:
        yield NO_SPAN
        return
    tracer = otel_trace.get_tracer(tracing.SERVICE_NAME)
    clean = {key: value for key, value in (attributes or {}).items() if value is not None and value != ""}
    start = time.monotonic()
    with tracer.start_as_current_span(
        name,
        context=context,
        attributes=clean,
        record_exception=False,  # its message may quote what the backend was sent
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            tracing.set_error(span, type(exc).__name__)
            raise
        finally:
            span.set_attribute("duration_ms", round((time.monotonic() - start) * 1000.0, 3))
