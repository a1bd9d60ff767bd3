"""Events are aggregated as client-go's EventCorrelator does (issue 18): a repeat counts into the
Event already recorded instead of creating another object, against the real API server."""

from __future__ import annotations

from egress_proxies_controller.kube import events
from egress_proxies_controller.kube.client import Kube
from kubernetes import client as k8s


def proxy(namespace: str) -> dict:
    return {"metadata": {"namespace": namespace, "name": "p1", "uid": "uid-ev-1", "resourceVersion": "1"}}


def recorded(admin, namespace: str) -> list:
    items = k8s.CoreV1Api(admin).list_namespaced_event(namespace).items
    return sorted(((e.reason, e.message, e.count) for e in items), key=str)


def test_a_repeated_event_is_one_event_with_a_count(kube_admin, kube_namespace):
    kube = Kube(kube_admin)
    for _repeat in range(5):
        kube.event(proxy(kube_namespace), "Warning", "CreateFailed", "quota exceeded", "test")
    kube.event(proxy(kube_namespace), "Warning", "CreateFailed", "another reason", "test")
    kube.event(proxy(kube_namespace), "Normal", "Ready", "quota exceeded", "test")
    assert recorded(kube_admin, kube_namespace) == [
        ("CreateFailed", "another reason", 1),
        ("CreateFailed", "quota exceeded", 5),
        ("Ready", "quota exceeded", 1),
    ]


def test_a_deleted_event_is_recorded_anew_and_a_repeat_after_the_window_too(kube_admin, kube_namespace):
    now = [1000.0]
    kube = Kube(kube_admin)
    kube.events = events.EventCorrelator(window=600, clock=lambda: now[0])
    kube.event(proxy(kube_namespace), "Warning", "Unhealthy", "no answer", "test")
    core = k8s.CoreV1Api(kube_admin)
    (first,) = core.list_namespaced_event(kube_namespace).items
    core.delete_namespaced_event(first.metadata.name, kube_namespace)
    kube.event(proxy(kube_namespace), "Warning", "Unhealthy", "no answer", "test")  # 404 on patch
    assert recorded(kube_admin, kube_namespace) == [("Unhealthy", "no answer", 1)]
    now[0] += 601
    kube.event(proxy(kube_namespace), "Warning", "Unhealthy", "no answer", "test")
    assert recorded(kube_admin, kube_namespace) == [("Unhealthy", "no answer", 1)] * 2


def test_the_correlator_forgets_the_least_recently_used_first():
    corr = events.EventCorrelator(size=2, clock=lambda: 0.0)
    for name in ("a", "b"):
        corr.recorded((name,), name, "ns", 1)
    assert corr.repeat_of(("a",)) is not None  # a is now the most recent
    corr.recorded(("c",), "c", "ns", 1)
    assert corr.repeat_of(("b",)) is None
    assert corr.repeat_of(("a",)).name == "a" and corr.repeat_of(("c",)).name == "c"
