"""The batcher: provider calls grouped into runs, per provider; it only batches, never plans.

Reconcile hands it calls (key, Action, the snapshot the action was decided from). Each provider
has ``runs_in_flight`` runs of its own, so a stuck backend holds only its own Proxies. A run
takes what waits for its provider: up to ``poll_batch_max`` gets (one list answers them) and up
to ``batch_max`` creates and deletes (each real work on the backend). While a provider has a
run in flight its new calls wait ``gather_while_busy`` seconds for that run to end (a run that
ends takes everything waiting at once): one run instead of many that each pay an ansible
start-up for a few items. ``min_batch_interval`` spaces an idle provider's runs.

Each answer goes back to the queue as an event: into the mailbox, then ``queue.add(key)``; the
key's next reconcile applies it. A create's or delete's answer comes as soon as its item
finishes (the run's result stream), not when the batch ends; the run's final results answer
the rest, and a key is answered once (``InFlight.settle``). No run starts while ``may_act()`` is
False, and a key of a shard being given up is let go unrun. State here is the batcher's own,
under its own lock; the keys in flight are ``InFlight``'s.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import os
import threading
import time

from ..kube import errors
from ..telemetry import tracing
from . import run_inputs
from .model import GET, TRANSIENT, Action, Answer
from .status_writes import FAULT_ENV

log = logging.getLogger("egress_proxies_controller.proxy.batcher")
NO_ANSWER = Answer(ok=False, error_class=TRANSIENT, message="no answer")


@dataclasses.dataclass(frozen=True)
class Call:
    """One provider call a reconcile asked for; ``obj`` is the snapshot it decided from (the
    create's inputs are read from it before the run starts)."""

    key: str
    action: Action
    obj: dict


class Batcher:
    def __init__(
        self,
        kube,
        executor,
        queue,
        mailbox,
        in_flight,
        *,
        runs_in_flight: int = 3,
        batch_max: int = 500,
        poll_batch_max: int = 10000,
        gather_while_busy: float = 5.0,
        min_batch_interval: float = 0.0,
        may_act=lambda: True,
        owns=None,
        requeue_delay: float = 1.0,
    ):
        self.kube, self.executor, self.queue = kube, executor, queue
        self.mailbox, self.in_flight = mailbox, in_flight
        self.runs_in_flight, self.batch_max, self.poll_batch_max = runs_in_flight, batch_max, poll_batch_max
        self.gather_while_busy, self.min_batch_interval = gather_while_busy, min_batch_interval
        self.may_act, self.owns, self.requeue_delay = may_act, owns, requeue_delay
        self._lock = threading.Condition()
        self._answering = threading.Lock()  # a key's streamed and final answers: one delivered
        self._waiting: dict = {}  # provider -> {key: Call}, in arrival order
        self._since: dict = {}  # provider -> when its oldest waiting call arrived
        self._busy: dict = {}  # provider -> its runs in flight
        self._last_start: dict = {}  # provider -> when its last run started
        self._runs = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="run")
        self._futures: set = set()
        self._closed = False
        self._dispatcher = threading.Thread(target=self._dispatch, name="batcher", daemon=True)
        self._dispatcher.start()

    # -- what others ask ----------------------------------------------------------------

    def submit(self, calls: list) -> None:
        """Queue ``calls`` for their providers' next runs (their keys already in flight)."""
        with self._lock:
            if self._closed:  # stopping: nothing new starts; the queue keeps the keys
                for call in calls:
                    self._release(call.key, call.action, self.requeue_delay)
                return
            now = time.monotonic()
            for call in calls:
                self._since.setdefault(call.action.provider, now)
                self._waiting.setdefault(call.action.provider, {})[call.key] = call
            self._lock.notify_all()

    def idle(self) -> bool:
        """No call waits and no run is in flight."""
        with self._lock:
            return not self._waiting and not self._futures

    def waiting(self, provider: str) -> list:
        """The keys waiting for one of ``provider``'s runs (a copy)."""
        with self._lock:
            return list(self._waiting.get(provider, ()))

    def close(self) -> None:
        """Stop starting runs: waiting calls are let go (their keys requeued), runs in flight go on."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, {}
            self._since.clear()
            self._lock.notify_all()
        for calls in waiting.values():
            for key, call in calls.items():
                self._release(key, call.action, self.requeue_delay)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no call waits and every run ended; False when ``timeout`` passed first."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._waiting or self._futures:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._lock.wait(left if left is not None else 1.0)
        return True

    # -- dispatch -----------------------------------------------------------------------

    def _dispatch(self) -> None:
        with self._lock:
            while not self._closed:
                self._lock.wait(self._start_due())

    def _start_due(self) -> float:
        """Start each provider's run that may start now (lock held); seconds until one may."""
        now, wake = time.monotonic(), 1.0
        for provider in list(self._waiting):
            busy = self._busy.get(provider, 0)
            if busy >= self.runs_in_flight:
                continue  # the run that ends hands its slot over
            if busy:
                left = self.gather_while_busy - (now - self._since[provider])
            else:
                left = self.min_batch_interval - (now - self._last_start.get(provider, float("-inf")))
            if left > 0 and not self._full(provider):
                wake = min(wake, left)
                continue
            self._start(provider)
        return max(0.001, wake)

    def _full(self, provider: str) -> bool:
        calls = self._waiting.get(provider, {}).values()
        polls = sum(1 for c in calls if c.action.op == GET)
        return polls >= self.poll_batch_max or len(calls) - polls >= self.batch_max

    def _start(self, provider: str) -> None:
        """One run of what waits for ``provider`` (lock held): the rest waits for the next."""
        waiting = self._waiting.pop(provider)
        self._since.pop(provider, None)
        group, polls, heavy = {}, 0, 0
        for key, call in waiting.items():
            if call.action.op == GET:
                polls += 1
                fits = polls <= self.poll_batch_max
            else:
                heavy += 1
                fits = heavy <= self.batch_max
            if fits:
                group[key] = call
            else:
                self._since.setdefault(provider, time.monotonic())
                self._waiting.setdefault(provider, {})[key] = call
        self._busy[provider] = self._busy.get(provider, 0) + 1
        self._last_start[provider] = time.monotonic()
        future = self._runs.submit(self._run, provider, group)
        self._futures.add(future)
        future.add_done_callback(self._ended(provider))

    def _ended(self, provider: str):
        def ended(future) -> None:
            with self._lock:
                self._futures.discard(future)
                self._busy[provider] -= 1
                if self._waiting.get(provider) and not self._closed:
                    self._start(provider)  # a run that ends takes everything waiting
                self._lock.notify_all()

        return ended

    # -- a run --------------------------------------------------------------------------

    def _run(self, provider: str, group: dict) -> None:
        """One provider's calls in one run, each answer delivered as soon as it is known. Traced
        as one ``reconcile`` span (its runner runs, and each key's ``reconcile.apply``, are children)."""
        if self.owns is not None:
            for key in [k for k in group if not self.owns(k)]:
                call = group.pop(key)
                self._release(key, call.action, None)  # its shard is being given up: not ours soon
        if not group:
            return
        if not self.may_act():  # no longer leading (or not yet): the keys wait in the queue
            for key, call in group.items():
                self._release(key, call.action, self.requeue_delay)
            return
        actions = {key: call.action for key, call in group.items()}
        attributes = {
            "proxy.provider": provider,
            "proxy.count": len(group),
            "proxy.ops": sorted({a.op for a in actions.values()}),
        }
        try:
            with tracing.tracer().start_as_current_span("reconcile", attributes=attributes):
                trace = tracing.current_context()  # each answer's status write is traced under it

                def answered(key: str, answer: Answer) -> None:
                    self._answered(key, actions[key], answer, trace)

                # Everything the run needs is read now, from the objects it was decided from.
                fields = run_inputs.resolve(self.kube, {k: (c.action, c.obj) for k, c in group.items()})
                answers = self.executor.execute(actions, fields, on_answer=answered)
                for key in actions:
                    answered(key, answers.get(key) or NO_ANSWER)
        except Exception as exc:
            errors.log_failure(log, "run of %d keys failed" % len(group), exc)
            for key, call in group.items():  # only the calls not answered yet
                if self.in_flight.settle(key, call.action):
                    self.queue.add_rate_limited(key)

    def _answered(self, key: str, action: Action, answer: Answer, trace=None) -> None:
        """``answer`` to the mailbox and its key to the queue, once per key."""
        _maybe_crash(action, answer)
        with self._answering:
            if not self.in_flight.holds(key, action):
                return  # answered already (streamed, then in the final results), or a newer call
            if not self.may_act():  # no longer leading: the next leader reads the objects afresh
                self.in_flight.settle(key, action)
                return
            self.mailbox.put(key, action, answer, trace)  # before it leaves InFlight: never planned anew
            self.in_flight.settle(key, action)
        self.queue.add(key)

    def _release(self, key: str, action: Action, delay) -> None:
        """Let ``key``'s call ``action`` go unanswered: requeued after ``delay`` seconds (None:
        not requeued)."""
        if self.in_flight.settle(key, action) and delay is not None:
            self.queue.add_after(key, delay)


def _maybe_crash(action: Action, answer: Answer) -> None:
    """Fault injection (``FAULT_ENV`` = after-create, -get or -delete): die with SIGKILL's exit
    status right after such a call succeeded, before its answer reaches any status write."""
    fault = os.environ.get(FAULT_ENV, "")
    if fault == "after-" + action.op and answer.ok:
        log.error("fault injection %s: dying before the status write", fault)
        os._exit(137)
