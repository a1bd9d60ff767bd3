"""The controller's log lines: JSON (the default) or text, each naming the trace and span it was
written in.

A line written while a span is current (a reconcile, a runner run, the status writes) carries
``trace_id`` and ``span_id`` (hex, as collectors show them), so an operator goes from a log line
to its trace and back. Outside any span the fields are left out. ``--log-format`` chooses
(flags.py); nothing else in the controller formats log lines. The ids come from the
OpenTelemetry API directly: this runs before the collection's module_utils are importable.
"""

from __future__ import annotations

import json
import logging
import sys

from opentelemetry import trace as otel_trace

TEXT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def _ids() -> tuple:
    context = otel_trace.get_current_span().get_span_context()
    if not context.is_valid:
        return "", ""
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ts, level, logger, msg, then trace_id and span_id in a span, and
    exc for an exception."""

    def format(self, record):
        doc = {
            "ts": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        trace_id, span_id = _ids()
        if trace_id:
            doc["trace_id"], doc["span_id"] = trace_id, span_id
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc)


class TextFormatter(logging.Formatter):
    """``TEXT``, with `` trace_id=... span_id=...`` appended in a span."""

    def __init__(self):
        super().__init__(TEXT)

    def format(self, record):
        line = super().format(record)
        trace_id, span_id = _ids()
        if not trace_id:
            return line
        first, newline, rest = line.partition("\n")  # after the message, before a traceback
        return "%s trace_id=%s span_id=%s%s%s" % (first, trace_id, span_id, newline, rest)


def handler(log_format: str) -> logging.Handler:
    """A stderr handler formatting as ``--log-format`` says (``json`` or ``text``)."""
    out = logging.StreamHandler(sys.stderr)
    out.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    return out
