"""/readyz and /healthz as the parts come up (readiness.py), and the providers-file reports on
the Lease (config/lease_reports.py): once extracted from main(), now table-tested."""

from __future__ import annotations

import threading
import types

import pytest
from egress_proxies_controller.config.lease_reports import LeaseReports
from egress_proxies_controller.readiness import Readiness


def informer(synced: bool):
    event = threading.Event()
    if synced:
        event.set()
    return types.SimpleNamespace(synced=event)


def config(in_use="x", error=""):
    return types.SimpleNamespace(in_use=in_use, error=error)


def manager(missing=None, healthy=True):
    return types.SimpleNamespace(missing=missing or {}, healthy=lambda _within: healthy)


@pytest.mark.parametrize(
    ("leading", "synced", "cfg", "ready"),
    [
        (False, False, None, True),  # a standby for the Lease is ready at once
        (True, False, None, False),  # leading, cache not synced yet
        (True, True, None, True),
        (True, True, config(in_use=None, error="bad"), False),  # no good providers file yet
        (True, True, config(error="bad"), True),  # the last good file stays in use
    ],
)
def test_ready_follows_the_lease_the_cache_and_the_providers_file(leading, synced, cfg, ready):
    r = Readiness(informer(synced), leading=leading, liveness_timeout=300)
    r.config = cfg
    ok, details = r.ready()
    assert ok is ready
    assert details == (["providers file: bad"] if cfg is not None and cfg.error else [])


def test_ready_names_the_providers_gone_from_the_file():
    r = Readiness(informer(True), leading=True, liveness_timeout=300)
    r.config, r.manager = config(), manager({"gcp": 3})
    assert r.ready() == (True, ["providers file: no provider 'gcp' (it made the instances of 3 Proxies)"])


def test_with_shards_ready_once_the_coordinator_settled():
    settled = {"now": False}
    sharding = types.SimpleNamespace(coordinator=None)
    r = Readiness(informer(True), leading=True, liveness_timeout=300, sharding=sharding)
    assert r.ready()[0] is False  # no coordinator yet
    sharding.coordinator = types.SimpleNamespace(settled=lambda: settled["now"])
    assert r.ready()[0] is False
    settled["now"] = True
    assert r.ready()[0] is True


def test_healthy_is_the_loop_going_round():
    r = Readiness(informer(True), leading=True, liveness_timeout=300)
    assert r.healthy() is True  # standing by: nothing to be stuck
    r.manager = manager(healthy=False)
    assert r.healthy() is False


class Recorder:
    def __init__(self):
        self.events, self.gauge = [], []
        self.config_error = types.SimpleNamespace(set=self.gauge.append)

    def event(self, obj, event_type, reason, message, component, kind, api_version):
        self.events.append((obj["metadata"]["name"], kind, event_type, reason, message))


def reports(leader_elect=True):
    rec = Recorder()
    out = LeaseReports(
        rec, rec, leader_elect=leader_elect, lease_namespace="ns", lease_name="lease", path="/p.yaml"
    )
    return out, rec


def test_a_providers_file_problem_is_a_metric_and_one_event_on_the_lease():
    out, rec = reports()
    out.config_problem("providers[0].type: unknown")
    out.config = config(in_use=None)
    out.config_problem("still bad")
    out.config = config()
    out.config_problem("")
    assert rec.gauge == [1, 1, 0]
    assert [e[:4] for e in rec.events] == [("lease", "Lease", "Warning", "ProvidersFileInvalid")] * 2 + [
        ("lease", "Lease", "Normal", "ProvidersFileValid")
    ]
    assert rec.events[0][4].endswith("no provider calls until it is fixed")
    assert rec.events[2][4] == "providers file /p.yaml is valid again and in use"


def test_without_a_lease_only_the_metric_says_it():
    out, rec = reports(leader_elect=False)
    out.config_problem("bad")
    out.missing({"gcp": 2})
    assert rec.gauge == [1] and rec.events == []


def test_providers_gone_from_the_file_are_one_event():
    out, rec = reports()
    out.missing({})
    out.missing({"gcp": 2, "kvm": 1})
    assert len(rec.events) == 1
    assert rec.events[0][3] == "ProvidersMissing"
    assert "no provider 'gcp', 'kvm', which made the instances of 2 Proxies, 1 Proxies" in rec.events[0][4]


@pytest.mark.parametrize("leading", [False, True])
def test_refused_credentials_are_never_ready(leading):
    """Issue 40 §6: a standby (or leader) whose token the API server refuses said 200 ok."""
    from egress_proxies_controller.kube.credentials import MESSAGE, Refusal

    r = Readiness(informer(True), leading=leading, liveness_timeout=300)
    r.refusal = Refusal()
    assert r.ready()[0] is True
    r.refusal.note()
    r.refusal.note()  # said once (the log), whatever repeats it
    assert r.ready() == (False, ["kubernetes: %s" % MESSAGE])
