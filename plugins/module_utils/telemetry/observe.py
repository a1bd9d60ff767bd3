# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Observation of provider calls: one decorator for every provider.

Module processes are short-lived and cannot serve metrics, so each call is recorded as a
plain record (op, configured provider name, error class or ``ok``, duration) that the module
returns as ``telemetry``; the controller turns the records into Prometheus metrics. Each call
also runs inside an OpenTelemetry span ``provider.<op>``, a child of the module run's span
(``telemetry/tracing.py``, which configures the exporter from the standard ``OTEL_*`` variables and takes
the parent from ``TRACEPARENT``); without the API, or with nothing configured, it is a no-op.
Spans carry the op, the provider's configured name and type and the error class: never an
argument. Providers never count or time their own calls; under this span each opens one child
per backend call at its seam (backend_spans.py).
"""

from __future__ import annotations

import threading
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import Checker, Provider
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import tracing

try:
    from opentelemetry import trace as otel_trace
except ImportError:  # the API is optional: no tracing without it
    otel_trace = None

OK = "ok"


class Telemetry:
    """A thread-safe list of call records, shared by every provider of one module run."""

    def __init__(self):
        self._lock = threading.Lock()
        self._records = []

    def record(self, op: str, provider: str, outcome: str, seconds: float) -> None:
        with self._lock:
            self._records.append(
                {"op": op, "provider": provider, "class": outcome, "duration_seconds": round(seconds, 6)}
            )

    def records(self) -> list:
        with self._lock:
            return list(self._records)


def _span(op: str, provider: Provider):
    if otel_trace is None:
        return _NullSpan()
    tracer = otel_trace.get_tracer("crawl.egress_proxies")
    return tracer.start_as_current_span(
        "provider.%s" % op,
        context=tracing.parent(),
        attributes={"provider.name": provider.name, "provider.type": provider.type_name},
        # Not the exception's message or traceback: the span says the class (below), no more.
        record_exception=False,
        set_status_on_exception=False,
    )


class _NullSpan:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _observe_call(op: str, provider: Provider, telemetry, func, *args, bucket=None, deadline=None):
    """``func(*args)`` recorded and traced; the call's ``deadline`` (by default its last
    argument) also bounds the wait for a rate-limit token (``bucket``)."""
    start = time.monotonic()
    outcome = OK
    with _span(op, provider) as span:
        try:
            if bucket is not None:
                bucket.acquire(op, args[-1] if deadline is None else deadline)
            return func(*args)
        except Exception as exc:
            outcome = errors.class_of(exc)
            if span is not None:
                span.set_attribute("provider.error_class", outcome)
                if outcome != errors.NOT_FOUND:  # NotFound is an answer, not a failed call
                    tracing.set_error(span, outcome)
            raise
        finally:
            if telemetry is not None:
                telemetry.record(op, provider.name, outcome, time.monotonic() - start)


class ObservedProvider(Provider):
    """Delegates every contract method to ``inner``, recording and tracing each call."""

    def __init__(self, inner: Provider, telemetry, bucket=None):
        super().__init__(inner.name, inner.installation)
        self.inner = inner
        self.type_name = inner.type_name
        self.supports_auth = inner.supports_auth
        self.telemetry = telemetry
        self.bucket = bucket  # rate_limit.SharedTokenBucket, or None for no limit

    def _call(self, op: str, func, *args):
        return _observe_call(op, self.inner, self.telemetry, func, *args, bucket=self.bucket)

    def create(self, req, deadline):
        return self._call("create", self.inner.create, req, deadline)

    def get(self, provider_id, deadline):
        return self._call("get", self.inner.get, provider_id, deadline)

    def delete(self, provider_id, deadline):
        return self._call("delete", self.inner.delete, provider_id, deadline)

    def list_by_tag(self, deadline):
        return self._call("list", self.inner.list_by_tag, deadline)

    def sync_auth(self, provider_id, auth, deadline, apply=True):
        return _observe_call(
            "sync_auth",
            self.inner,
            self.telemetry,
            self.inner.sync_auth,
            provider_id,
            auth,
            deadline,
            apply,
            bucket=self.bucket,
            deadline=deadline,
        )

    def id_for(self, name, placement, namespace=""):
        return self.inner.id_for(name, placement, namespace)

    def name_in_id(self, provider_id):
        return self.inner.name_in_id(provider_id)

    def check_request(self, req):
        return self.inner.check_request(req)

    def pool_lock_path(self, pool):
        return self.inner.pool_lock_path(pool)

    def collect_leftovers(self, deadline):
        return self.inner.collect_leftovers(deadline)

    def list_problems(self):
        return self.inner.list_problems()

    def fixed_fields(self, provider_id, deadline):
        return self.inner.fixed_fields(provider_id, deadline)

    def capacity(self):
        return self.inner.capacity()

    def backend_key(self):
        return self.inner.backend_key()

    def close(self):
        self.inner.close()

    @property
    def checker(self):
        """The unwrapped provider when it implements ``Checker`` (blueprint §5), else ``None``."""
        return self.inner if isinstance(self.inner, Checker) else None

    def check(self, deadline) -> list:
        checker = self.checker
        if checker is None:
            return []
        return self._call("check", checker.check, deadline)


def observed(inner: Provider, telemetry=None, bucket=None) -> ObservedProvider:
    return ObservedProvider(inner, telemetry, bucket)
