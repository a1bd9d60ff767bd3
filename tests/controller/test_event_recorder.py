"""kube/event_recorder.py: Events sent off the reconcile's path (issue 38), one object's in order,
never holding the caller, dropped (and counted) when the queue is full, flushed at close."""

from __future__ import annotations

import threading
import time

from egress_proxies_controller.kube.event_recorder import EventRecorder
from egress_proxies_controller.proxy import reconciler as rec
from egress_proxies_controller.proxy.status_writes import StatusWrites


def obj(uid: str) -> dict:
    return {"metadata": {"uid": uid, "name": "p-" + uid, "namespace": "ns", "resourceVersion": "1"}}


class SlowSend:
    """A ``Kube.event`` that takes ``seconds`` per Event, as a loaded API server does."""

    def __init__(self, seconds: float = 0.0, gate: threading.Event | None = None):
        self.seconds, self.gate = seconds, gate
        self.sent, self.lock = [], threading.Lock()

    def __call__(self, o, event_type, reason, message, component, **kinds):
        if self.gate is not None:
            self.gate.wait(10)
        time.sleep(self.seconds)
        with self.lock:
            self.sent.append((o["metadata"]["uid"], reason, kinds.get("kind")))


def test_recording_never_waits_for_the_send_and_close_sends_what_is_queued():
    send = SlowSend(seconds=0.05)
    recorder = EventRecorder(send, senders=2)
    started = time.monotonic()
    for i in range(20):
        recorder.event(obj("u%d" % i), "Normal", "Ready", "m", "c", kind="Proxy")
    recorded_in = time.monotonic() - started
    assert recorder.close(timeout=10)
    assert len(send.sent) == 20, send.sent
    # 20 sends of 50 ms on 2 senders take 0.5 s; recording them took a small part of one send.
    assert recorded_in < 0.05, recorded_in
    assert {kind for _uid, _reason, kind in send.sent} == {"Proxy"}


def test_one_objects_events_are_sent_in_the_order_they_were_recorded():
    send = SlowSend(seconds=0.001)
    recorder = EventRecorder(send, senders=4)
    reasons = ["Created", "Provisioning", "Ready", "Unhealthy", "Ready"]
    for uid in ("a", "b", "c", "d", "e", "f"):
        for reason in reasons:
            recorder.event(obj(uid), "Normal", reason, "m", "c")
    assert recorder.close(timeout=10)
    for uid in ("a", "b", "c", "d", "e", "f"):
        assert [r for u, r, _k in send.sent if u == uid] == reasons


def test_a_full_queue_drops_the_new_event_and_counts_it(caplog):
    gate = threading.Event()
    send = SlowSend(gate=gate)
    recorder = EventRecorder(send, senders=1, size=2)
    for i in range(6):  # one taken by the sender (held at the gate), two queued, three dropped
        recorder.event(obj("x"), "Normal", "R%d" % i, "m", "c")
        time.sleep(0.02)
    assert recorder.dropped == 3
    assert "Event queue is full" in caplog.text
    gate.set()
    assert recorder.close(timeout=10)
    assert [r for _u, r, _k in send.sent] == ["R0", "R1", "R2"]


def test_a_failing_send_never_stops_its_sender():
    sent = []

    def send(o, event_type, reason, message, component, **kinds):
        if reason == "Boom":
            raise RuntimeError("API server said no")
        sent.append(reason)

    recorder = EventRecorder(send, senders=1)
    for reason in ("Boom", "Ready"):
        recorder.event(obj("y"), "Normal", reason, "m", "c")
    assert recorder.close(timeout=10)
    assert sent == ["Ready"]


class Kube:
    """The writes StatusWrites makes, and whether an Event was sent before the status write returned."""

    def __init__(self):
        self.calls = []

    def write_status(self, o, status):
        self.calls.append("status")
        return dict(o, status=status)

    def event(self, *args, **kwargs):  # the synchronous path: must not be taken with a recorder
        self.calls.append("event-sync")


class OwnWrites:
    def wrote(self, o):
        pass


def test_status_writes_hand_events_to_the_recorder_and_return_before_they_are_sent():
    gate = threading.Event()
    send = SlowSend(gate=gate)
    recorder = EventRecorder(send, senders=1)
    kube = Kube()
    step = rec.Step(status={"state": "Provisioning"}, events=[("Normal", "Created", "instance made")])
    written = StatusWrites(kube, OwnWrites(), recorder).commit(obj("z"), step)
    assert written["status"] == {"state": "Provisioning"}
    assert kube.calls == ["status"] and send.sent == []  # the reconcile went on; the Event waits
    gate.set()
    assert recorder.close(timeout=10)
    assert send.sent == [("z", "Created", None)]
