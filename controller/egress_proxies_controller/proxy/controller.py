"""The Proxy controller: informer -> work queue -> reconciler -> executor -> status, per provider.

Each tick takes every due key (up to ``batch_max``), plans them, writes what needs no provider
call (finalizer first: it must be on the object before anything is created), then hands each
provider's calls to ONE executor run of its own, and applies each answer as its run ends. At most
``runs_in_flight`` batches are planned at once and each provider has ``runs_in_flight`` run slots
of its own: a stuck backend holds only its own Proxies (its keys wait while its slots are full),
never another provider's. Keys that find their provider's slots full wait together (held, so
never reconciled twice), and the run that frees a slot hands it straight to them: one run then
carries all of them (up to ``poll_batch_max`` polls and ``batch_max`` creates and deletes), where runs started
as keys trickled in would each carry a few and pay a whole ansible start-up for them. Running
polls come due in rounds per provider (``poll_rounds``), so one run answers a whole round.
A key is held by exactly one batch, run or waiting list at a time (the queue guarantees one
reconcile per key; a failed batch lets go only of the keys it still holds). No run starts while
``may_act()`` is False (this replica may no longer lead).
The manager is the one writer of a Proxy's status, ``Healthy`` and ``Ready`` included: the health
engine only records its probes in ``observations`` and queues a key whose verdict changed; each
plan and each answer here reads the key's latest observation.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import os
import threading
import time

from ..kube import client as kube_mod
from ..kube import credentials, errors
from ..kube.informer import BEHIND
from ..telemetry import tracing
from . import poll_rounds, run_inputs
from . import reconciler as rec
from .filed_answers import FiledAnswers
from .health_observations import HealthObservations
from .held_keys import HeldKeys
from .provider_slots import ProviderSlots
from .reconciler import Proxy, Reconciler
from .status_writes import FAULT_ENV, StatusWrites

log = logging.getLogger("egress_proxies_controller.proxy.controller")
# Fault injection for the crash-safety tests: "after-create" (or -get, -delete) makes the process
# die with SIGKILL's exit status right after such a call succeeded, before any status write;
# "after-finalizer" right after the finalizer is written, before any create.
POP_SLACK = 0.25  # seconds after the first due key that a batch takes keys early


class ProxyController:
    def __init__(
        self,
        kube,
        informer,
        queue,
        executor,
        settings: rec.Settings,
        config,
        *,
        runs_in_flight: int = 3,
        batch_max: int = 500,
        poll_batch_max: int = 10000,
        poll_in_rounds: bool = True,
        gather_while_busy: float = 5.0,
        tick: float = 1.0,
        min_batch_interval: float = 0.0,
        metrics=None,
        may_act=lambda: True,
        drain_timeout: float = 60.0,
        report_missing=None,
        owns=None,
        held: HeldKeys | None = None,
        observations: HealthObservations | None = None,
    ):
        self.kube, self.informer, self.queue, self.executor = kube, informer, queue, executor
        self.settings = settings
        self.config = config  # providers_config.ProvidersConfig
        self.runs_in_flight = runs_in_flight
        self.batch_max, self.tick = batch_max, tick
        self.poll_batch_max = poll_batch_max
        self.poll_in_rounds = poll_in_rounds  # False: each Proxy polled running_poll after its answer
        self.min_batch_interval = min_batch_interval
        self._last_batch = float("-inf")  # when the last batch was dispatched
        self.metrics = metrics
        self.stop = threading.Event()
        self._batch_slots = threading.Semaphore(runs_in_flight)  # batches planned at once
        self.held = held or HeldKeys()  # shared with sharding's busy(shard)
        self._held = self.held.keys  # key -> the batch (its key list) or run (its group) processing it
        self._since = {}  # key -> when the queue handed it out (the reconcile-time metric)
        self._held_lock = self.held.lock
        self.may_act = may_act
        self.drain_timeout = drain_timeout
        self.report_missing = report_missing or (lambda missing: None)
        self.missing: dict = {}  # provider -> Proxies with an instance there, not in the file
        # While a provider has a run in flight, its new work waits ``gather_while_busy`` for a
        # slot to be handed over (then it takes a free one): one run instead of many small ones.
        self.slots = ProviderSlots(self.held, runs_in_flight, batch_max, gather_while_busy)
        self._runs = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="run")
        self._in_flight = set()  # futures of runs not yet applied
        self.reconciler = self._reconciler()
        self.last_progress = time.monotonic()  # the loop's heartbeat, for /healthz
        self.owns = owns  # with --shards: is the key in a shard this replica dispatches?
        self.answers = FiledAnswers()  # answers a conflict kept from their status write
        self.writes = StatusWrites(kube, informer.own_writes)  # the one writer of a Proxy's status
        self.observations = observations or HealthObservations()  # the health engine's, shared

    # -- config ------------------------------------------------------------------------

    def _reconciler(self) -> Reconciler:
        return Reconciler(
            self.settings, self.config.names, changed_at=self.config.changed_at, epochs=self.config.epochs
        )

    def reload_config(self) -> None:
        if not self.config.refresh():
            return
        self.executor.providers_file = self.config.in_use
        self.reconciler = self._reconciler()
        missing = {}
        changed, rotated = self.config.changed, self.config.rotated
        for key in self.informer.cache_keys():
            proxy = Proxy.from_object(self.informer.get(key) or {})
            # Only Proxies of a provider this version added (releases latched ones), removed or
            # changed are planned again: 10,000 others need no run for a new provider's entry.
            # Rotated credential files re-plan only the latched: the rest keep their polls.
            providers = {proxy.spec.provider, proxy.made_by}
            if providers & changed or (providers & rotated and proxy.latched):
                self.queue.add(key)
            if proxy.status.get("providerID") and proxy.made_by not in self.config.names:
                missing[proxy.made_by] = missing.get(proxy.made_by, 0) + 1
        if missing != self.missing:
            # Their Proxies are left alone (no call, no write): say it once, here.
            self.missing = missing
            for provider, count in sorted(missing.items()):
                log.error(
                    "providers file %s has no provider %r, which made the instances of %d Proxies: "
                    "they are left as they are until it is back",
                    self.config.path,
                    provider,
                    count,
                )
            self.report_missing(missing)

    # -- loop --------------------------------------------------------------------------

    def run(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(self.runs_in_flight, thread_name_prefix="batch") as pool:
            while not self.stop.is_set():
                self.last_progress = time.monotonic()
                self.reload_config()
                self._flush_waiting()
                if self.config.in_use is None:  # no good providers file yet: no provider calls
                    self.stop.wait(self.tick)
                    continue
                if not self._batch_slots.acquire(timeout=self.tick):
                    continue
                gather = self.min_batch_interval - (time.monotonic() - self._last_batch)
                if gather > 0 and self.stop.wait(min(gather, self.min_batch_interval)):
                    self._batch_slots.release()
                    continue  # stopping
                # Slack: the keys of one poll round come due microseconds apart, not together.
                keys = self.queue.pop_due(self.batch_max + self.poll_batch_max, self.tick, POP_SLACK)
                if not keys:
                    self._batch_slots.release()
                    continue
                self._last_batch = time.monotonic()
                with self._held_lock:  # shard_leases gives a shard up only once none is held here
                    keys, others = self._split_owned(keys)
                    now = time.monotonic()
                    for key in keys:
                        self._held[key] = keys  # which batch holds the key, until it is let go
                        self._since[key] = now
                for key in others:  # another replica's: enqueued again if this one takes the shard
                    self.queue.forget(key)
                    self.queue.done(key)
                if not keys:
                    self._batch_slots.release()
                    continue
                pool.submit(self._batch, keys)
        if not self.drain(self.drain_timeout):
            log.warning("runs still in flight after %.0fs: cancelling them", self.drain_timeout)
            self.executor.abort_all()
            self.drain()
        log.info("manager stopped")

    def _split_owned(self, keys: list) -> tuple:
        if self.owns is None:
            return keys, []
        owned = {k: self.owns(k) for k in keys}
        return [k for k in keys if owned[k]], [k for k in keys if not owned[k]]

    def healthy(self, within: float) -> bool:
        """Liveness: the loop went round within the last ``within`` seconds (a stuck loop is not
        alive, whatever the HTTP server says)."""
        return time.monotonic() - self.last_progress < within

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every dispatched run has been applied; False when ``timeout`` passed first."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:  # a run that ends may hand its slot to a new run: wait for that one too
            with self._held_lock:
                pending = set(self._in_flight)
            if not pending:
                return True
            left = None if end is None else max(0.0, end - time.monotonic())
            _done, not_done = concurrent.futures.wait(pending, left)
            if not_done:
                return False

    def _batch(self, keys: list) -> None:
        try:
            self._process(keys)
        except Exception as exc:
            errors.log_failure(log, "batch of %d keys failed" % len(keys), exc)
            self._back_off_held(keys)
        finally:
            self._batch_slots.release()

    def _process(self, keys: list) -> None:
        reconciler = self.reconciler
        planned = self._plan_all(keys, reconciler)
        groups = {}
        for key, entry in planned.items():
            groups.setdefault(entry[0].provider, {})[key] = entry
        for provider, group in sorted(groups.items()):
            slots = self.slots.of(provider)
            if not self.may_act():
                self._requeue_soon(list(group))
                continue
            with self._held_lock:  # a slot freed meanwhile is either taken here or hands over to us
                if self.slots.should_gather(provider, len(group)) or not slots.acquire(blocking=False):
                    self.slots.wait(provider, list(group))
                    continue
            if not self._start(provider, group, reconciler, slots):
                self._hand_over(provider, slots)

    def _flush_waiting(self) -> None:
        """Work that waited ``gather_while_busy`` for a handed-over slot takes a free one."""
        with self._held_lock:
            for provider, slots in self.slots.overdue():
                future = self._runs.submit(self._take_waiting, provider, slots)
                self._in_flight.add(future)
                future.add_done_callback(self._run_done)

    def _requeue_soon(self, keys) -> None:
        for key in keys:  # we may not act (or are stopping): the keys wait in the queue
            self._let_go(key)
            self.queue.add_after(key, self.tick)

    def _start(self, provider: str, planned: dict, reconciler: Reconciler, slots) -> bool:
        """One run for what ``planned`` fits in one (``_one_run``), on a slot already taken;
        the rest waits for the next slot. False when there was nothing to run (the caller
        still holds the slot and must hand it over)."""
        group, rest = self._one_run(planned)
        with self._held_lock:
            if rest:  # the slot is ours until this run ends, so they go next
                self.slots.wait(provider, rest)
            if not group:
                return False
            for key in group:
                self._held[key] = group
            self.slots.started(provider)
            future = self._runs.submit(self._run_group, group, reconciler, slots, provider)
            self._in_flight.add(future)
            future.add_done_callback(self._run_done)
        return True

    def _hand_over(self, provider: str, slots) -> None:
        """A run of ``provider`` ended: its slot goes to the keys waiting for one, or is freed."""
        self.slots.ended(provider)
        self._take_waiting(provider, slots)

    def _take_waiting(self, provider: str, slots) -> None:
        """Start a run of the provider's waiting keys on ``slots``' slot (already ours), or free it."""
        while True:
            waiting = self.slots.take_waiting(provider, slots)
            if not waiting:
                return
            if self.stop.is_set() or not self.may_act():
                self._requeue_soon(waiting)
                continue
            reconciler = self.reconciler
            planned = self._plan_all(waiting, reconciler)  # the objects may have changed meanwhile
            if planned and self._start(provider, planned, reconciler, slots):
                return

    def _one_run(self, planned: dict) -> tuple:
        """What one run carries of ``planned``: up to ``poll_batch_max`` gets (one list answers
        them) and up to ``batch_max`` creates and deletes (each is real work on the backend);
        keys of a shard being given up are let go. Returns (group, keys left to wait)."""
        group, rest, polls, heavy = {}, [], 0, 0
        for key, entry in planned.items():
            if self.owns is not None and not self.owns(key):
                self._let_go(key)  # its shard is being given up: not dispatched (not ours soon)
                continue
            if entry[0].op == rec.GET:
                polls += 1
                fits = polls <= self.poll_batch_max
            else:
                heavy += 1
                fits = heavy <= self.batch_max
            if fits:
                group[key] = entry
            else:
                rest.append(key)
        return group, rest

    def _plan_all(self, keys, reconciler: Reconciler) -> dict:
        """key -> (action, the object it was planned from), for the keys that need a call."""
        planned = {}
        for key in keys:
            self._guarded(key, lambda k=key: self._plan_one(k, reconciler, planned))
        return planned

    def _run_done(self, future) -> None:
        with self._held_lock:
            self._in_flight.discard(future)

    def _run_group(self, group: dict, reconciler: Reconciler, slots, provider: str) -> None:
        """One provider's calls in one run; each answer applied to its own key. Traced as one
        ``reconcile`` span (its runner runs and each key's ``reconcile.apply`` are children)."""
        actions = [action for action, _obj in group.values()]
        attributes = {
            "proxy.provider": provider,
            "proxy.count": len(group),
            "proxy.ops": sorted({a.op for a in actions}),
        }
        with tracing.tracer().start_as_current_span("reconcile", attributes=attributes):
            self._run_group_traced(group, reconciler, slots, provider)

    def _run_group_traced(self, group: dict, reconciler: Reconciler, slots, provider: str) -> None:
        try:
            # Everything the run needs is read now, from the objects it was planned from.
            create_fields = run_inputs.resolve(self.kube, group)
            answers = self.executor.execute({k: action for k, (action, _obj) in group.items()}, create_fields)
            self._maybe_crash({k: a for k, (a, _o) in group.items()}, answers)
            if not self.may_act():  # no longer leading: the next leader reads the objects afresh
                for key in group:
                    self._let_go(key)
                return
            for key, (action, obj) in group.items():
                answer = answers.get(key) or rec.Answer(
                    ok=False, error_class=rec.TRANSIENT, message="no answer"
                )
                span_attributes = {"proxy.key": key, "proxy.op": action.op, "proxy.outcome": _outcome(answer)}
                with tracing.tracer().start_as_current_span("reconcile.apply", attributes=span_attributes):
                    self._guarded(
                        key, lambda k=key, a=action, r=answer, o=obj: self._apply_one(k, a, r, o, reconciler)
                    )
        except Exception as exc:
            errors.log_failure(log, "run of %d keys failed" % len(group), exc)
            self._back_off_held(group)
        finally:
            self._hand_over(provider, slots)

    def _back_off_held(self, token) -> None:
        """Back off the keys ``token`` (a batch or a run) still holds, and only those: a key it
        already let go of may be in another batch by now."""
        with self._held_lock:
            still = [k for k in token if self._held.get(k) is token]
        for key in still:
            self._finish(key, rec.Step(backoff=True))

    def _guarded(self, key: str, work) -> None:
        """One key's failure (an API error on its write) backs off that key only."""
        try:
            work()
        except Exception as exc:
            if credentials.refused(exc):  # said once (kube/credentials.py); the process stops
                log.debug("reconcile of %s: the API server refused our credentials", key)
            else:
                errors.log_failure(log, "reconcile of %s failed" % key, exc)
            self._finish(key, rec.Step(backoff=True))

    def _plan_one(self, key: str, reconciler: Reconciler, planned: dict) -> None:
        obj = self.informer.snapshot(key)  # the one read of this reconcile
        if obj is BEHIND:
            self._let_go(key)  # the watch has not delivered our last write yet: it queues the key
            return
        if obj is None:
            self._drop(key)
            return
        filed = self.answers.take(key, obj)
        if filed is not None:  # an answer its status write could not record yet: recorded first
            self._apply_to(key, obj, *filed, reconciler)
            return
        step = reconciler.plan(Proxy.from_object(obj), self.observations.latest(key))
        try:
            obj = self.writes.commit(obj, step)
        except kube_mod.Conflict:
            # Someone wrote the object since it was read: decide afresh from the new one.
            self._replan(key)
            return
        if obj is None:
            self._drop(key)
            return
        if step.action is None or step.remove_finalizer:
            self._finish(key, step)
            return
        meta = obj.get("metadata") or {}
        if meta.get("uid") != step.action.uid or int(meta.get("generation") or 0) != step.action.generation:
            self._replan(key)  # changed under our own finalizer write: plan from what it is now
            return
        action = dataclasses.replace(step.action, resource_version=str(meta.get("resourceVersion") or ""))
        planned[key] = (action, obj)

    def _apply_one(
        self, key: str, action: rec.Action, answer: rec.Answer, obj: dict, reconciler: Reconciler
    ) -> None:
        """The answer, recorded on the object its action was planned from (``obj``)."""
        self._note_poll(obj, action, answer)
        self._apply_to(key, obj, action, answer, reconciler)

    def _apply_to(
        self, key: str, obj: dict, action: rec.Action, answer: rec.Answer, reconciler: Reconciler
    ) -> None:
        """Record ``answer`` on ``obj`` (one snapshot, written with its resourceVersion). On a
        conflict (someone wrote the object meanwhile, or deleted and made it again) the answer is
        filed for the key's next reconcile and the key requeued: that reconcile reads the object
        afresh and drops an answer about another uid."""
        step = reconciler.apply(Proxy.from_object(obj), action, answer, self.observations.latest(key))
        try:
            latest = self.writes.commit(obj, step)
        except kube_mod.Conflict:
            self.answers.file(key, action, answer)
            self._replan(key)
            return
        if latest is None:
            self._drop(key)
            return
        if step.status is not None and step.status.get("state") != "Running":
            self.observations.forget(key)  # a recreated instance is probed afresh
        now = Proxy.from_object(latest)
        if now.generation != action.generation or now.deleting != (action.phase == rec.PHASE_FINAL):
            self._replan(key)  # the Proxy changed while its call ran: plan again from the new state
            return
        self._finish(key, step)

    def _note_poll(self, obj: dict, action: rec.Action, answer: rec.Answer) -> None:
        """An answered poll goes into the poll-gap histogram (telemetry/poll_gaps.py); any other step of
        the Proxy's instance (a create, a delete) starts its gaps afresh."""
        if self.metrics is None:
            return
        if action.op == rec.GET and answer.ok:
            self.metrics.poll_gaps.answered(action.uid, (obj.get("status") or {}).get("state", ""))
        elif action.op != rec.GET:
            self.metrics.poll_gaps.forget(action.uid)

    def _let_go(self, key: str) -> float:
        """Release ``key`` to the queue; returns the seconds since it was handed out."""
        with self._held_lock:
            self._held.pop(key, None)
            since = self._since.pop(key, None)
        self.queue.done(key)
        return time.monotonic() - since if since is not None else 0.0

    def _drop(self, key: str) -> None:
        self.answers.forget(key)
        self.queue.forget(key)
        self._let_go(key)

    def _replan(self, key: str) -> None:
        self._let_go(key)
        self.queue.add(key)

    @staticmethod
    def _maybe_crash(actions: dict, answers: dict) -> None:
        fault = os.environ.get(FAULT_ENV, "")
        if not fault.startswith("after-"):
            return
        op = fault[len("after-") :]
        if any(a.op == op and answers.get(k) is not None and answers[k].ok for k, a in actions.items()):
            log.error("fault injection %s: dying before the status write", fault)
            os._exit(137)

    def _finish(self, key: str, step: rec.Step) -> None:
        seconds = self._let_go(key)
        if self.metrics is not None:
            result = (
                "error" if step.backoff else "requeue_after" if step.requeue_after is not None else "success"
            )
            self.metrics.reconciled(result, seconds)
        if step.backoff:
            self.queue.add_rate_limited(key)
        elif step.poll_round and self.poll_in_rounds:
            self.queue.forget(key)
            self.queue.add_after(key, poll_rounds.delay(step.poll_round, step.requeue_after))
        elif step.requeue_after is not None:
            self.queue.forget(key)
            self.queue.add_after(key, step.requeue_after)
        else:
            self.queue.forget(key)


def _outcome(answer: rec.Answer) -> str:
    """A span's view of an answer: ``ok`` or its error class (never its message)."""
    return "ok" if answer.ok else answer.error_class or rec.TRANSIENT
