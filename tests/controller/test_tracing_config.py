"""The controller's tracing follows the standard OTEL_* variables: an OTLP endpoint turns export
on; none, ``OTEL_SDK_DISABLED=true``, ``OTEL_TRACES_EXPORTER=none`` or an unsupported protocol
leave it off (spans are no-ops). The rule is module_utils' tracing.export_wanted, which the
controller's tracing.configure and the module runs both use."""

from __future__ import annotations

import pytest
from egress_proxies_controller.telemetry import tracing

from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import tracing as module_tracing

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
    assert module_tracing.export_wanted(environ) is wanted  # the controller's rule too (tracing.configure)


def test_unwanted_or_unsupported_export_configures_nothing(caplog):
    assert tracing.configure({}) is None
    assert tracing.configure({**ENDPOINT, "OTEL_SDK_DISABLED": "true"}) is None
    assert tracing.configure({**ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) is None
    assert "grpc" in caplog.text and "only http/protobuf" in caplog.text


def test_no_span_recording_means_no_traceparent_for_the_modules():
    assert tracing.run_environment() == {}


@pytest.mark.parametrize(
    "environ, name",
    [
        ({}, "egress-proxies-controller"),
        ({"OTEL_SERVICE_NAME": "mine"}, None),  # the SDK's Resource.create names it from os.environ
        ({"OTEL_RESOURCE_ATTRIBUTES": "service.name=mine"}, None),
    ],
)
def test_the_exporting_provider_names_the_service_unless_the_variables_do(environ, name):
    """otlp_provider: the controller's (PRODUCT, with its version) and the modules' exporter."""
    provider = module_tracing.otlp_provider("egress-proxies-controller", {"service.version": "9.9"}, environ)
    try:
        attributes = provider.resource.attributes
        assert attributes["service.version"] == "9.9"
        if name:
            assert attributes["service.name"] == name
        else:
            assert attributes.get("service.name") != "egress-proxies-controller"
    finally:
        provider.shutdown()
