"""The poll-gap histogram (telemetry/poll_gaps.py): what the steady-state bench reads to say whether any
Running Proxy went longer than twice its poll interval without an answered poll."""

from __future__ import annotations

from egress_proxies_controller.proxy import model
from egress_proxies_controller.proxy.reconcile import note_poll
from egress_proxies_controller.telemetry.metrics import Metrics
from egress_proxies_controller.telemetry.poll_gaps import PollGaps
from prometheus_client import CollectorRegistry


def _buckets(registry, state: str) -> dict:
    out = {}
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == "egress_proxies_poll_gap_seconds_bucket" and sample.labels["state"] == state:
                out[sample.labels["le"]] = sample.value
    return out


def test_the_gap_between_two_answered_polls_is_observed_under_the_state_it_was_in():
    registry = CollectorRegistry()
    gaps = PollGaps(registry)
    gaps.answered("u1", "Running", now=100.0)
    assert _buckets(registry, "Running") == {}  # one poll is no gap yet
    gaps.answered("u1", "Running", now=195.0)
    buckets = _buckets(registry, "Running")
    assert buckets["90.0"] == 0 and buckets["120.0"] == 1 and buckets["+Inf"] == 1


def test_a_forgotten_proxy_starts_afresh():
    registry = CollectorRegistry()
    gaps = PollGaps(registry)
    gaps.answered("u1", "Running", now=0.0)
    gaps.forget("u1")
    gaps.answered("u1", "Running", now=500.0)
    assert _buckets(registry, "Running") == {}


def test_the_reconcile_notes_answered_polls_and_forgets_on_other_steps():
    """A failed poll is no answer (the gap keeps growing); a create or delete starts afresh."""
    metrics = Metrics()
    obj = {"status": {"state": "Running"}}
    get = model.Action(op=model.GET, phase=model.PHASE_POLL, provider="local", uid="u1")
    ok, failed = model.Answer(ok=True), model.Answer(ok=False, error_class="transient")
    note_poll(metrics, obj, get, ok)
    note_poll(metrics, obj, get, failed)
    note_poll(metrics, obj, get, ok)
    assert _buckets(metrics.registry, "Running")["+Inf"] == 1
    delete = model.Action(op=model.DELETE, phase=model.PHASE_REPLACE, provider="local", uid="u1")
    note_poll(metrics, obj, delete, ok)
    note_poll(metrics, obj, get, ok)
    assert _buckets(metrics.registry, "Running")["+Inf"] == 1
