"""reconcile(key): one Proxy decided from one snapshot, written with its resourceVersion.

controller-runtime's shape. A worker pops the key (the queue runs one reconcile per key at a
time) and this reads the informer's snapshot once (``BEHIND``: let go, the watch queues the key
when our last write arrives), takes the key's delivered answer if the batcher left one in the
mailbox, and decides with the pure ``Reconciler`` (taken once, at the start: a configuration
reloaded meanwhile is the next reconcile's): the answer applied, or the next step planned. It
writes the finalizer, status and Events with the snapshot's resourceVersion (status_writes.py)
and returns what it wants: done (with a requeue after N, or a back-off), requeue now (a 409: the
answer, if any, is dropped, and the next reconcile plans afresh; creates and deletes are
idempotent by uid), or a provider call for the batcher. While the key has a call in flight it
decides nothing new: the answer's event brings it back.
"""

from __future__ import annotations

import dataclasses
import logging

from ..kube import client as kube_mod
from ..kube.informer import BEHIND
from ..telemetry import tracing
from . import reconciler as rec
from .batcher import Call
from .reconciler import Proxy

log = logging.getLogger("egress_proxies_controller.proxy.controller")

LET_GO, DONE, REQUEUE, DROP, CALL = "let-go", "done", "requeue", "drop", "call"


@dataclasses.dataclass
class Outcome:
    """What one reconcile wants: ``LET_GO`` (nothing: an event brings the key back), ``DONE``
    (``step`` says when next), ``REQUEUE`` (now), ``DROP`` (the Proxy is gone), ``CALL``
    (``call`` goes to the batcher)."""

    what: str
    step: rec.Step | None = None
    call: Call | None = None


class Reconcile:
    def __init__(
        self, informer, writes, mailbox, in_flight, observations, reconciler, metrics=None, owns=None
    ):
        self.informer, self.writes = informer, writes
        self.mailbox, self.in_flight = mailbox, in_flight
        self.observations = observations
        self.reconciler = reconciler  # () -> the Reconciler of the configuration in use
        self.metrics, self.owns = metrics, owns

    def __call__(self, key: str) -> Outcome:
        if self.owns is not None and not self.owns(key):
            return Outcome(DROP)  # another replica's: queued again if this one takes its shard
        reconciler = self.reconciler()  # one view of the configuration for the whole reconcile
        obj = self.informer.snapshot(key)  # the one read of this reconcile
        if obj is BEHIND:
            return Outcome(LET_GO)
        if obj is None:
            self.mailbox.drop(key)
            return Outcome(DROP)
        delivered = self.mailbox.take(key, (obj.get("metadata") or {}).get("uid"))
        if delivered is not None:
            action, answer, trace = delivered
            attributes = {"proxy.key": key, "proxy.op": action.op, "proxy.outcome": _outcome(answer)}
            span = tracing.tracer().start_as_current_span(
                "reconcile.apply", context=trace, attributes=attributes
            )
            with span:
                return self._apply(key, obj, action, answer, reconciler)
        if key in self.in_flight:
            return Outcome(LET_GO)  # its call's answer brings it back
        return self._plan(key, obj, reconciler)

    def _plan(self, key: str, obj: dict, reconciler: rec.Reconciler) -> Outcome:
        step = reconciler.plan(Proxy.from_object(obj), self.observations.latest(key))
        try:
            obj = self.writes.commit(obj, step)
        except kube_mod.Conflict:  # written by someone since it was read: decide afresh
            return Outcome(REQUEUE)
        if obj is None:
            return Outcome(DROP)
        if step.action is None or step.remove_finalizer:
            return Outcome(DONE, step)
        meta = obj.get("metadata") or {}
        if meta.get("uid") != step.action.uid or int(meta.get("generation") or 0) != step.action.generation:
            return Outcome(REQUEUE)  # changed under our own finalizer write
        action = dataclasses.replace(step.action, resource_version=str(meta.get("resourceVersion") or ""))
        return Outcome(CALL, call=Call(key, action, obj))

    def _apply(self, key: str, obj: dict, action: rec.Action, answer: rec.Answer, reconciler) -> Outcome:
        """``answer`` recorded on ``obj`` (this reconcile's snapshot) with its resourceVersion."""
        note_poll(self.metrics, obj, action, answer)
        step = reconciler.apply(Proxy.from_object(obj), action, answer, self.observations.latest(key))
        try:
            latest = self.writes.commit(obj, step)
        except kube_mod.Conflict:  # dropped: the next reconcile plans afresh from the new object
            return Outcome(REQUEUE)
        if latest is None:
            return Outcome(DROP)
        if step.status is not None and step.status.get("state") != "Running":
            self.observations.forget(key)  # a recreated instance is probed afresh
        now = Proxy.from_object(latest)
        if now.generation != action.generation or now.deleting != (action.phase == rec.PHASE_FINAL):
            return Outcome(REQUEUE)  # the Proxy changed while its call ran: plan from the new state
        return Outcome(DONE, step)


def note_poll(metrics, obj: dict, action: rec.Action, answer: rec.Answer) -> None:
    """An answered poll goes into the poll-gap histogram (telemetry/poll_gaps.py); any other
    step of the Proxy's instance (a create, a delete) starts its gaps afresh."""
    if metrics is None:
        return
    if action.op == rec.GET and answer.ok:
        metrics.poll_gaps.answered(action.uid, (obj.get("status") or {}).get("state", ""))
    elif action.op != rec.GET:
        metrics.poll_gaps.forget(action.uid)


def _outcome(answer: rec.Answer) -> str:
    """A span's view of an answer: ``ok`` or its error class (never its message)."""
    return "ok" if answer.ok else answer.error_class or rec.TRANSIENT
