"""Where the controller's time goes (issue 18): its API requests under client-go's REST client
names, and each runner run split into start-up, module work and wind-down from its events."""

from __future__ import annotations

from cluster import kube_testlib
from egress_proxies_controller.telemetry import runner_phases
from egress_proxies_controller.telemetry.metrics import Metrics
from egress_proxies_controller.telemetry.rest_metrics import RestClientMetrics
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry


def test_every_request_to_the_real_api_server_is_counted_by_code_and_method(kube_cluster):
    registry = CollectorRegistry()
    api_client = kube_testlib.api_client(kube_cluster.kubeconfig)
    RestClientMetrics(registry).instrument(api_client)
    core = k8s.CoreV1Api(api_client)
    core.list_namespace(limit=1)
    try:
        core.read_namespace("egress-proxies-no-such-namespace")
    except ApiException as exc:
        assert exc.status == 404
    host = api_client.configuration.host.split("://", 1)[1]
    assert (
        registry.get_sample_value(
            "rest_client_requests_total", {"code": "200", "method": "GET", "host": host}
        )
        == 1
    )
    assert (
        registry.get_sample_value(
            "rest_client_requests_total", {"code": "404", "method": "GET", "host": host}
        )
        == 1
    )
    count = registry.get_sample_value(
        "rest_client_request_duration_seconds_count", {"verb": "GET", "host": host}
    )
    assert count == 2


def test_a_request_that_gets_no_answer_is_counted_as_an_error(kube_cluster):
    registry = CollectorRegistry()
    api_client = kube_testlib.api_client(kube_cluster.kubeconfig)
    api_client.configuration.host = "https://127.0.0.1:1"  # nothing listens there
    api_client.rest_client = type(api_client.rest_client)(api_client.configuration)
    RestClientMetrics(registry).instrument(api_client)
    try:
        k8s.CoreV1Api(api_client).list_namespace(_request_timeout=2)
    except Exception:
        pass
    labels = {"code": "<error>", "method": "GET", "host": "127.0.0.1:1"}
    assert registry.get_sample_value("rest_client_requests_total", labels) == 1


def event(kind: str, created: str) -> dict:
    return {"event": kind, "created": created}


def test_a_run_splits_into_start_up_module_work_and_wind_down():
    started_at = 1_700_000_000.0  # 2023-11-14T22:13:20Z
    events = [
        event("playbook_on_start", "2023-11-14T22:13:21.000000"),
        event("runner_on_start", "2023-11-14T22:13:22.500000"),
        event("runner_on_ok", "2023-11-14T22:13:25.000000"),
        event("runner_on_start", "2023-11-14T22:13:25.100000"),
        event("runner_on_failed", "2023-11-14T22:13:26.500000"),
        event("playbook_on_stats", "2023-11-14T22:13:26.900000"),
    ]
    got = runner_phases.phases(events, started_at, 7.5)
    assert round(got["startup"], 3) == 2.5  # until the first module started
    assert round(got["module"], 3) == 4.0  # first module start to last task result
    assert round(got["finish"], 3) == 1.0


def test_a_run_whose_events_say_nothing_has_no_phases():
    assert runner_phases.phases([event("playbook_on_start", "2023-11-14T22:13:21")], 0.0, 3.0) is None
    assert runner_phases.phases([{"event": "runner_on_start"}], 0.0, 3.0) is None  # no stamp


def test_phases_are_exported_per_run():
    m = Metrics()
    m.runner_run("successful", 7.5, {"startup": 2.5, "module": 4.0, "finish": 1.0})
    m.runner_run("failed", 1.0, None)
    assert m.registry.get_sample_value("egress_proxies_runner_phase_seconds_sum", {"phase": "module"}) == 4.0
    assert (
        m.registry.get_sample_value("egress_proxies_runner_phase_seconds_count", {"phase": "startup"}) == 1.0
    )
