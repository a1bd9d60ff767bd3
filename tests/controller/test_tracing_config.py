"""The controller's tracing follows the standard OTEL_* variables: an OTLP endpoint turns export
on; none, ``OTEL_SDK_DISABLED=true``, ``OTEL_TRACES_EXPORTER=none`` or an unsupported protocol
leave it off (spans are no-ops). The module side reads the same variables the same way."""

from __future__ import annotations

import pytest
from egress_proxies_controller import tracing

from ansible_collections.crawl.egress_proxies.plugins.module_utils import tracing as module_tracing

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}


@pytest.mark.parametrize(
    "environ, wanted",
    [
        ({}, False),
        (ENDPOINT, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({**ENDPOINT, "OTEL_SDK_DISABLED": "true"}, False),
        ({**ENDPOINT, "OTEL_SDK_DISABLED": "TRUE"}, False),
        ({**ENDPOINT, "OTEL_SDK_DISABLED": "false"}, True),
        ({**ENDPOINT, "OTEL_TRACES_EXPORTER": "none"}, False),
        ({**ENDPOINT, "OTEL_TRACES_EXPORTER": "console,otlp"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, False),
    ],
)
def test_export_is_wanted_exactly_when_the_variables_say_so(environ, wanted):
    assert tracing.export_wanted(environ) is wanted
    assert module_tracing.export_wanted(environ) is wanted


def test_unwanted_or_unsupported_export_configures_nothing(caplog):
    assert tracing.configure({}) is None
    assert tracing.configure({**ENDPOINT, "OTEL_SDK_DISABLED": "true"}) is None
    assert tracing.configure({**ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) is None
    assert "grpc" in caplog.text and "only http/protobuf" in caplog.text


def test_no_span_recording_means_no_traceparent_for_the_modules():
    assert tracing.run_environment() == {}
