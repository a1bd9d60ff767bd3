"""The controller exports the work queue and reconcile series under controller-runtime's names
(issue 18), with values that follow what the queue did."""

from __future__ import annotations

from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.telemetry import metrics as metrics_mod
from egress_proxies_controller.telemetry.queue_metrics import WorkQueueMetrics
from prometheus_client import CollectorRegistry


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def sample(registry, name: str, **labels) -> float:
    value = registry.get_sample_value(name, dict({"name": "proxy"}, **labels))
    return 0.0 if value is None else value


def test_adds_depth_latency_work_and_retries_follow_the_queue():
    clock, registry = Clock(), CollectorRegistry()
    q = WorkQueue(clock=clock, metrics=WorkQueueMetrics(registry, "proxy", clock=clock))
    q.add("a")
    q.add_after("b", 5)
    assert sample(registry, "workqueue_adds_total") == 2
    assert sample(registry, "workqueue_depth") == 2
    clock.now += 7  # a was due 7 s ago, b 2 s ago
    assert sorted(q.pop_due(10, 0)) == ["a", "b"]
    assert sample(registry, "workqueue_depth") == 0
    assert sample(registry, "workqueue_queue_duration_seconds_sum") == 9.0
    clock.now += 3
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 3.0
    assert sample(registry, "workqueue_unfinished_work_seconds") == 6.0
    q.done("a")
    q.add_rate_limited("b")  # b failed: retried
    q.done("b")
    assert sample(registry, "workqueue_work_duration_seconds_count") == 2
    assert sample(registry, "workqueue_work_duration_seconds_sum") == 6.0
    assert sample(registry, "workqueue_retries_total") == 1
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 0.0
    assert sample(registry, "workqueue_depth") == 1  # b waits for its backoff


def test_reconcile_results_errors_and_process_figures_are_exported():
    m = metrics_mod.Metrics()
    text = m.render().decode()  # every series is there, at 0, before the first reconcile
    for result in ("success", "error", "requeue_after"):
        assert 'controller_runtime_reconcile_total{controller="proxy",result="%s"} 0.0' % result in text
    assert 'controller_runtime_reconcile_errors_total{controller="proxy"} 0.0' in text
    m.reconciled("success", 1.5)
    m.reconciled("error", 0.5)
    m.reconciled("requeue_after", 0.2)
    text = m.render().decode()
    assert 'controller_runtime_reconcile_total{controller="proxy",result="success"} 1.0' in text
    assert 'controller_runtime_reconcile_errors_total{controller="proxy"} 1.0' in text
    assert 'controller_runtime_reconcile_time_seconds_count{controller="proxy"} 3.0' in text
    assert m.registry.get_sample_value("process_resident_memory_bytes") > 0
    assert m.registry.get_sample_value("process_open_fds") > 0
    assert m.registry.get_sample_value("egress_proxies_children_cpu_seconds_total") >= 0
    # A figure that only grows is a counter (promtool refuses a gauge named *_total).
    assert "# TYPE egress_proxies_children_cpu_seconds_total counter" in text
