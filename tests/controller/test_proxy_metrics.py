"""The series the dashboard and the alerts need beyond the run and queue figures: Proxies by
provider and Ready reason, the longest not-Ready spell (telemetry/proxy_metrics.py), a pool's rotation
progress and floor (telemetry/pool_metrics.py), and the leader gauge of a replica without leader election."""

from __future__ import annotations

from egress_proxies_controller.pool.model import ROTATE_ANNOTATION
from egress_proxies_controller.telemetry import metrics as metrics_mod
from prometheus_client.parser import text_string_to_metric_families

from . import test_pool_reconciler as pools


def _proxy(name, provider, ready=None, reason="", since="", status_provider=""):
    obj = {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": {"provider": provider}}
    if ready is not None or status_provider:
        obj["status"] = {"provider": status_provider}
        if ready is not None:
            cond = {"type": "Ready", "status": ready, "reason": reason, "lastTransitionTime": since}
            obj["status"]["conditions"] = [{"type": "Healthy", "status": "False"}, cond]
    return obj


def _samples(text: str, name: str) -> dict:
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


def test_proxies_are_counted_by_provider_ready_and_reason_at_each_scrape():
    cache = [
        _proxy("a", "local", "True", "Running", "2026-12-01T10:00:00Z"),
        _proxy("b", "local", "True", "Running", "2026-12-01T10:00:00Z"),
        _proxy("c", "local", "False", "Retrying", "2026-12-01T10:00:00Z"),
        _proxy("d", "gcp-eu", "False", "Provisioning", "2026-12-01T10:09:00Z"),
        _proxy("e", "gcp-eu", "False", "Retrying", "2026-12-01T10:05:00Z"),
        _proxy("f", "gcp-eu"),  # no status yet: Ready Unknown
        # spec.provider changed; the instance is still on the provider that made it
        _proxy("g", "gcp-eu", "False", "Replacing", "2026-12-01T10:08:20Z", status_provider="second"),
        _proxy("h", "second", "True", "Running", "not a time"),
    ]
    m = metrics_mod.Metrics()
    m.registry.register(metrics_mod.ProxyConditions(lambda: list(cache), clock=lambda: 1_796_119_800.0))
    text = m.render().decode()  # 2026-12-01T10:10:00Z
    assert _samples(text, "egress_proxies_proxies") == {
        (("provider", "local"), ("ready", "True"), ("reason", "Running")): 2.0,
        (("provider", "local"), ("ready", "False"), ("reason", "Retrying")): 1.0,
        (("provider", "gcp-eu"), ("ready", "False"), ("reason", "Provisioning")): 1.0,
        (("provider", "gcp-eu"), ("ready", "False"), ("reason", "Retrying")): 1.0,
        (("provider", "gcp-eu"), ("ready", "Unknown"), ("reason", "")): 1.0,
        (("provider", "second"), ("ready", "False"), ("reason", "Replacing")): 1.0,
        (("provider", "second"), ("ready", "True"), ("reason", "Running")): 1.0,
    }
    assert _samples(text, "egress_proxies_proxies_not_ready_seconds") == {
        (("provider", "local"),): 600.0,
        (("provider", "gcp-eu"),): 300.0,  # the longest of its not-Ready ones
        (("provider", "second"),): 100.0,
    }
    cache[:] = cache[:2]  # gone from the cache: gone from the next scrape
    text = m.render().decode()
    assert set(_samples(text, "egress_proxies_proxies")) == {
        (("provider", "local"), ("ready", "True"), ("reason", "Running"))
    }
    assert _samples(text, "egress_proxies_proxies_not_ready_seconds") == {(("provider", "local"),): 0.0}


def test_a_pool_reports_its_rotation_progress_and_its_floor():
    ctl = pools.controller()
    obj = pools.pool_obj(replicas=4)
    obj["spec"]["strategy"] = {"maxSurge": 1, "maxUnavailable": "50%"}
    ctl.informer.apply_event("MODIFIED", obj)
    ctl.round()
    pools.finish_round(ctl)
    ctl.round()

    def gauge(g):
        return g.labels("ns", "web")._value.get()

    m = ctl.metrics
    assert (gauge(m.ready), gauge(m.updated), gauge(m.min_available)) == (4, 4, 2)
    ctl.informer.apply_event(
        "MODIFIED", dict(obj, metadata=dict(obj["metadata"], annotations={ROTATE_ANNOTATION: "now"}))
    )
    ctl.round()  # a rotation starts: no member is at the new revision yet
    assert gauge(ctl.metrics.updated) == 0 and gauge(ctl.metrics.min_available) == 2
    ctl.metrics.forget("ns", "web", ["main", "side"])
    assert not [s for f in ctl.metrics.updated.collect() for s in f.samples]
    assert not [s for f in ctl.metrics.min_available.collect() for s in f.samples]
