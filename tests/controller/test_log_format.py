"""The controller's log lines name the trace and span they were written in (``--log-format``
json or text), and say nothing of the kind outside a span; the real entry point's handler is
the one tested (``__main__._configure_logging``)."""

from __future__ import annotations

import json
import logging

import pytest
from egress_proxies_controller import __main__ as entry
from egress_proxies_controller.flags import parser
from opentelemetry.sdk.trace import TracerProvider

TRACER = TracerProvider().get_tracer("test")  # a recording tracer, not installed globally


@pytest.fixture
def configured(capsys):
    """``_configure_logging`` as ``main`` calls it (its handler writes to the stderr capsys
    reads); returns a reader of what was written. The root logger is restored after."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)

    def configure(log_format: str):
        root.handlers[:] = []
        entry._configure_logging(parser().parse_args(["--providers-file", "/x", "--log-format", log_format]))
        return lambda: capsys.readouterr().err

    yield configure
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def _ids(span) -> tuple:
    context = span.get_span_context()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def test_json_lines_carry_the_ids_of_the_span_they_were_written_in(configured):
    out = configured("json")
    log = logging.getLogger("egress_proxies_controller.test")
    log.info("outside")
    with TRACER.start_as_current_span("reconcile") as span:
        log.info("inside %s", "a span")
    outside, inside = [json.loads(line) for line in out().splitlines()]
    assert "trace_id" not in outside and "span_id" not in outside
    assert (inside["trace_id"], inside["span_id"]) == _ids(span)
    assert inside["msg"] == "inside a span" and inside["level"] == "INFO"


def test_text_lines_carry_the_ids_before_a_traceback(configured):
    out = configured("text")
    log = logging.getLogger("egress_proxies_controller.test")
    log.warning("outside")
    with TRACER.start_as_current_span("runner.run") as span:
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    lines = out().splitlines()
    assert lines[0].endswith("WARNING egress_proxies_controller.test outside")
    trace_id, span_id = _ids(span)
    assert lines[1].endswith(
        "ERROR egress_proxies_controller.test failed trace_id=%s span_id=%s" % (trace_id, span_id)
    )
    assert lines[2].startswith("Traceback")
