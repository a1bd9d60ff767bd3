"""One writer of a Proxy's Healthy and Ready (issue 30): the health engine only observes.

The engine probes real loopback sockets and records what it saw in ``HealthObservations``,
queueing a key once per change of verdict; it never writes status or Events (its Kube fails on
any write). The reconcile (the real ProxyController over fake_cluster.py's in-memory API) writes Healthy
and Ready from the observation, only when the observation names the object and instance the
status does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket

import pytest
from egress_proxies_controller import api
from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.loops.proxy_probes import ProxyHealthEngine
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.health_observations import HealthObservations, Observation
from egress_proxies_controller.proxy.reconciler import Answer, Proxy, Settings
from egress_proxies_controller.proxy.spec import ProxySpec
from egress_proxies_controller.telemetry.metrics import Metrics

from .fake_cluster import FakeExecutor, FakeInformer, FakeKube, proxy_object

KEY = "ns/p1"
UID = "uid-1"
PROVIDER_ID = "local/p1-instance"
IP = "127.0.0.1"


def cond(obj: dict, cond_type: str) -> dict:
    return next((c for c in obj["status"].get("conditions", []) if c["type"] == cond_type), {})


class NoWrites(FakeKube):
    """The engine's Kube: any write fails the test."""

    def write_status(self, obj, status):
        raise AssertionError("the health engine wrote status")

    def event(self, obj, event_type, reason, message, component):
        raise AssertionError("the health engine wrote an Event")

    def set_finalizer(self, obj, present):
        raise AssertionError("the health engine wrote a finalizer")


class Adds:
    """The engine's work queue: every key it queued."""

    def __init__(self):
        self.keys = []

    def add(self, key: str) -> None:
        self.keys.append(key)


@contextlib.contextmanager
def listener():
    """A port that accepts TCP connections (the probe without a URL is a connect)."""
    with socket.socket() as sock:
        sock.bind((IP, 0))
        sock.listen(128)  # never accepted: every probe's connect must fit
        yield sock.getsockname()[1]


def refused_port() -> int:
    with socket.socket() as sock:
        sock.bind((IP, 0))
        return sock.getsockname()[1]


def running(kube: FakeKube, port: int, healthy: str = "", reason: str = "", **meta) -> dict:
    """A Running Proxy on ``port`` as the reconcile writes it (Healthy as given, or none)."""
    obj = proxy_object(port=port, **meta)
    status = {
        "providerID": PROVIDER_ID,
        "provider": "local",
        "specHash": ProxySpec.from_object(obj).hash(),
        "state": "Running",
        "ip": IP,
        "observedGeneration": 1,
        "conditions": [
            {
                "type": api.COND_READY,
                "status": "True",
                "reason": "Running",
                "message": "",
                "observedGeneration": 1,
            }
        ],
    }
    if healthy:
        status["conditions"].append(
            {
                "type": api.COND_HEALTHY,
                "status": healthy,
                "reason": reason,
                "message": "",
                "observedGeneration": 1,
            }
        )
    obj["status"] = status
    return kube.put(obj)


def engine(kube, queue, observations) -> ProxyHealthEngine:
    return ProxyHealthEngine(
        FakeInformer(kube), kube, queue, observations, Metrics(), interval=3600, timeout=2.0, concurrency=4
    )


def observation(
    port: int, healthy: bool = False, reason: str = "ConnectionRefused", **changes
) -> Observation:
    seen = Observation(UID, PROVIDER_ID, IP, port, healthy, reason, "probe says %s" % reason)
    return dataclasses.replace(seen, **changes)


# -- the engine observes --------------------------------------------------------------------


def test_the_engine_writes_nothing_and_queues_a_flip_once():
    kube, queue, observations = NoWrites(), Adds(), HealthObservations()
    with listener() as port:
        running(kube, port, "True", "Reachable")
        e = engine(kube, queue, observations)
        e.round()
        assert queue.keys == []  # healthy as status says: no reconcile
        assert observations.latest(KEY).verdict() == ("True", "Reachable")
    e.round()  # the listener is closed: refused
    e.round()  # still refused, status not written yet: not queued again
    assert queue.keys == [KEY]
    seen = observations.latest(KEY)
    assert (seen.verdict(), seen.instance) == (("False", "ConnectionRefused"), (UID, PROVIDER_ID, IP, port))
    assert "refused" in seen.message


def test_after_a_restart_an_unchanged_verdict_queues_nothing():
    """1000 healthy proxies do not make 1000 reconciles a round, the first one included."""
    kube, queue = NoWrites(), Adds()
    with listener() as port:
        for n in range(20):
            running(kube, port, "True", "Reachable", name="p%d" % n, uid="uid-%d" % n)
        e = engine(kube, queue, HealthObservations())
        e.round()
        e.round()
    assert queue.keys == []


def test_a_proxy_no_longer_running_is_forgotten():
    kube, observations = NoWrites(), HealthObservations()
    running(kube, refused_port())
    e = engine(kube, Adds(), observations)
    e.round()
    assert observations.latest(KEY) is not None
    stopped = kube.get(KEY)
    stopped["status"]["state"] = "Stopped"
    kube.put(stopped)
    e.round()
    assert observations.latest(KEY) is None


def test_a_new_instance_is_a_change_even_with_the_same_verdict():
    observations = HealthObservations()
    assert observations.record(KEY, observation(1))
    assert not observations.record(KEY, observation(1, message="another message"))
    assert observations.record(KEY, observation(1, provider_id="local/another"))
    assert observations.record(KEY, observation(1, healthy=True, reason="Reachable"))


# -- the reconcile writes ---------------------------------------------------------------------


def answer_running(key, action, fields):
    if action.op == "delete":
        return Answer(ok=True, instance={"id": action.provider_id, "state": "absent"})
    return Answer(ok=True, instance={"id": PROVIDER_ID, "state": "Running", "ip": IP})


@pytest.fixture
def setup(tmp_path, providers_file):
    kube, observations = FakeKube(), HealthObservations()
    executor = FakeExecutor(answer_running)
    config = ProvidersConfig(providers_file, os.path.join(tmp_path, "private"), lambda _path, _names: [])
    m = ProxyController(
        kube,
        FakeInformer(kube),
        WorkQueue(0.01, 0.02),
        executor,
        Settings(),
        config,
        observations=observations,
    )
    m.reload_config()
    return kube, observations, executor, m


def reconcile(m: ProxyController) -> None:
    """The key reconciled, and the answer of the call it asked for applied."""
    m.process([KEY])
    assert m.drain(30)
    m.process(m.queue.pop_due(100, 0))
    assert m.drain(30)


def test_the_reconcile_writes_healthy_and_ready_from_the_observation(setup):
    kube, observations, executor, m = setup
    running(kube, 3128)
    observations.record(KEY, observation(3128))
    reconcile(m)
    obj = kube.get(KEY)
    assert (cond(obj, "Healthy")["status"], cond(obj, "Healthy")["reason"]) == ("False", "ConnectionRefused")
    assert (cond(obj, "Ready")["status"], cond(obj, "Ready")["reason"]) == ("False", "Unhealthy")
    assert cond(obj, "Ready")["message"] == "probe says ConnectionRefused"
    # written before the poll it queued, and the instance read at once
    first = {"status": kube.status_writes[0][1]}
    assert (cond(first, "Healthy")["status"], cond(first, "Ready")["reason"]) == ("False", "Unhealthy")
    assert [a[KEY].phase for a in executor.calls] == ["poll"]
    assert [(t, r) for _k, t, r, _m in kube.events] == [("Warning", "Unhealthy")]
    observations.record(KEY, observation(3128, True, "Reachable"))
    reconcile(m)
    obj = kube.get(KEY)
    assert (cond(obj, "Healthy")["status"], cond(obj, "Ready")["status"]) == ("True", "True")
    assert cond(obj, "Ready")["reason"] == "Running"
    assert [(t, r) for _k, t, r, _m in kube.events] == [("Warning", "Unhealthy")]  # one per flip


@pytest.mark.parametrize(
    "stale",
    [
        {"uid": "uid-of-an-earlier-proxy-of-that-name"},
        {"provider_id": "local/an-older-instance"},
        {"ip": "127.0.0.9"},
        {"probed_port": 8080},
    ],
)
def test_an_observation_of_another_object_or_instance_is_not_applied(setup, stale):
    kube, observations, _executor, m = setup
    running(kube, 3128, "True", "Reachable")
    observations.record(KEY, observation(stale.pop("probed_port", 3128), **stale))
    reconcile(m)
    obj = kube.get(KEY)
    assert (cond(obj, "Healthy")["status"], cond(obj, "Ready")["status"]) == ("True", "True")
    assert kube.events == []


def test_health_never_turns_a_ready_the_reconciler_decided_otherwise(setup):
    """A Running proxy whose Ready is the reconciler's (QuotaExceeded) gets Healthy, not Ready."""
    kube, observations, _executor, m = setup
    obj = running(kube, 3128, "False", "Timeout")
    obj["status"]["conditions"][0].update(status="False", reason="QuotaExceeded")
    kube.put(obj)
    observations.record(KEY, observation(3128, True, "Reachable"))
    step = m.reconciler.plan(Proxy.from_object(kube.get(KEY)), observations.latest(KEY))
    planned = {"status": step.status}
    assert cond(planned, "Healthy")["status"] == "True"
    assert (cond(planned, "Ready")["status"], cond(planned, "Ready")["reason"]) == ("False", "QuotaExceeded")


class StopsWhileProbed(FakeInformer):
    """The cache as the engine reads it: the instance stops between its round's list and its
    probe's result (the first read of a key says Running, every later one Stopped)."""

    def __init__(self, kube):
        super().__init__(kube)
        self.reads = 0

    def get(self, key):
        obj = super().get(key)
        self.reads += 1
        if self.reads > 1:
            obj["status"]["state"] = "Stopped"
        return obj


def test_a_result_about_an_instance_that_stopped_while_probed_is_dropped():
    kube, queue, observations = NoWrites(), Adds(), HealthObservations()
    running(kube, refused_port(), "True", "Reachable")
    informer = StopsWhileProbed(kube)
    ProxyHealthEngine(
        informer, kube, queue, observations, Metrics(), interval=3600, timeout=2.0, concurrency=1
    ).round()
    assert informer.reads == 2
    assert (observations.latest(KEY), queue.keys) == (None, [])


def test_a_recreated_instance_starts_with_no_verdict_of_the_dead_one(setup):
    """Same name, providerID, ip and port (the local provider's recreation): the dead Squid's
    ConnectionRefused must not make the new one Unhealthy before it was ever probed."""
    kube, observations, executor, m = setup
    states = iter(["Stopped", "absent", "Running"])  # the poll, the recycle's delete, the create
    executor.answer = lambda key, action, fields: Answer(
        ok=True, instance={"id": PROVIDER_ID, "state": next(states), "ip": IP}
    )
    running(kube, 3128, "True", "Reachable")
    observations.record(KEY, observation(3128))
    for _step in range(3):
        reconcile(m)
    obj = kube.get(KEY)
    assert [(a[KEY].op, a[KEY].phase) for a in executor.calls] == [
        ("get", "poll"),
        ("delete", "recycle"),
        ("create", "create"),
    ]
    assert obj["status"]["state"] == "Running" and cond(obj, "Healthy") == {}
    assert (cond(obj, "Ready")["status"], cond(obj, "Ready")["reason"]) == ("True", "Running")
