"""The Proxy controller's writes of one step: the finalizer, the status, the Events (these
recorded for a sender thread in the controller process: kube/event_recorder.py).

The status is written with the resourceVersion of the snapshot the step was decided from and
never retried: a conflict raises ``client.Conflict`` and the reconcile requeues the key (an
answer it was recording is dropped: the next reconcile plans afresh). What is written reaches
the informer's cache through its watch, never from here: each write's answer is recorded in
``own_writes`` (kube/own_writes.py), so its watch event queues nothing and a key planned before
that event arrives waits for it.
"""

from __future__ import annotations

import logging
import os

from .. import api
from . import reconciler as rec

log = logging.getLogger("egress_proxies_controller.proxy.controller")
FAULT_ENV = "EGRESS_PROXIES_CONTROLLER_FAULT"


class StatusWrites:
    def __init__(self, kube, own_writes, events=None):
        """``events``: where Events go (kube/event_recorder.py sends them off the reconcile's
        path); None: ``kube.event``, each sent before the reconcile goes on."""
        self.kube, self.own_writes = kube, own_writes
        self.events = events if events is not None else kube

    def commit(self, obj: dict, step: rec.Step):
        """Finalizer, then status, then Events; returns the latest object (None when gone).
        Every write is guarded by the snapshot's resourceVersion: a conflict raises
        ``client.Conflict`` for the caller to requeue the key."""
        if step.add_finalizer:
            obj = self.kube.set_finalizer(obj, True)
            if obj is None:
                return None
            if os.environ.get(FAULT_ENV, "") == "after-finalizer":
                log.error("fault injection after-finalizer: dying before the create")
                os._exit(137)
            self.own_writes.wrote(obj)
        if step.status is not None:
            written = self.kube.write_status(obj, step.status)
            if written is not None:
                obj = written
                self.own_writes.wrote(obj)
        for event_type, reason, message in step.events:
            self.events.event(obj, event_type, reason, message, api.EVENT_COMPONENT)
        if step.remove_finalizer:
            obj = self.kube.set_finalizer(obj, False)
            if obj is not None:
                self.own_writes.wrote(obj)
        return obj
