"""The batcher: provider calls grouped into runs, per provider; it only batches, never plans.

Reconcile hands it calls (key, Action, the snapshot the action was decided from). Each provider
has ``runs_in_flight`` runs of its own, so a stuck backend holds only its own Proxies. A run
takes what waits for its provider: up to ``poll_batch_max`` gets (one list answers them) and up
to ``batch_max`` creates and deletes (each real work on the backend). While a provider has a
run in flight its new calls wait ``gather_while_busy`` seconds for that run to end (a run that
ends takes everything waiting at once): one run instead of many that each pay an ansible
start-up for a few items. ``min_batch_interval`` spaces an idle provider's runs.

A run with creates or deletes takes more while it works (``feed_window`` > 0, the executor's):
its feed (the executor's ``new_feed()``, runs/item_feed.py) hands each further create or delete
of its provider to the running module at once, with no wait for another run and its start-up,
until it is full (``batch_max``), quiet or old (open_feed.py). A burst of Proxies, whose calls
reach the batcher over seconds as their finalizers are written, is worked on as it comes. A call that no open
feed takes (full, closed) starts a run of its own at once while its provider has two free slots
or more. A run that carries polls takes nothing more (its gets come after its creates, so they
would wait for the feed to close), and the last free slot is left to gather as before: a poll
round is never kept waiting behind runs that take creates.

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
from .open_feed import OpenFeed
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
        feed_window: float = 0.0,
    ):
        self.kube, self.executor, self.queue = kube, executor, queue
        self.mailbox, self.in_flight = mailbox, in_flight
        self.runs_in_flight, self.batch_max, self.poll_batch_max = runs_in_flight, batch_max, poll_batch_max
        self.gather_while_busy, self.min_batch_interval = gather_while_busy, min_batch_interval
        self.may_act, self.owns, self.requeue_delay = may_act, owns, requeue_delay
        self.feed_window = feed_window  # seconds a run takes more calls while it works; 0: never
        self._lock = threading.Condition()
        self._answering = threading.Lock()  # a key's streamed and final answers: one delivered
        self._waiting: dict = {}  # provider -> {key: Call}, in arrival order
        self._since: dict = {}  # provider -> when its oldest waiting call arrived
        self._busy: dict = {}  # provider -> its runs in flight
        self._last_start: dict = {}  # provider -> when its last run started
        self._feeds: dict = {}  # provider -> the OpenFeed of its run that takes more calls
        self._runs = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="run")
        self._futures: set = set()
        self._closed = False
        self._dispatcher = threading.Thread(target=self._dispatch, name="batcher", daemon=True)
        self._dispatcher.start()

    # -- what others ask ----------------------------------------------------------------

    @property
    def feeds(self) -> bool:
        """Whether runs take more calls while they work (then a create is best handed over alone,
        at once: a run under way takes it)."""
        return self.feed_window > 0

    def submit(self, calls: list) -> None:
        """Queue ``calls`` for their providers' next runs, or hand them to a run under way that
        takes more (their keys already in flight)."""
        fed = []
        with self._lock:
            if self._closed:  # stopping: nothing new starts; the queue keeps the keys
                for call in calls:
                    self._release(call.key, call.action, self.requeue_delay)
                return
            now = time.monotonic()
            for call in calls:
                open_feed = self._feeds.get(call.action.provider)
                if (
                    call.action.op != GET
                    and open_feed is not None
                    and open_feed.takes(call.key, self.batch_max)
                ):
                    open_feed.reserve(call.key, now)
                    fed.append((open_feed, call))
                    continue
                self._since.setdefault(call.action.provider, now)
                self._waiting.setdefault(call.action.provider, {})[call.key] = call
            self._lock.notify_all()
        for open_feed, call in fed:
            self._feed(open_feed, call)

    def _feed(self, open_feed: OpenFeed, call: Call) -> None:
        """``call`` into a run under way (its inputs read now, outside the lock); a feed closed
        meanwhile gives it back to wait for another run."""
        key, action = call.key, call.action
        ours = self.owns is None or self.owns(key)  # not ours: its shard is being given up
        acting, offered = ours and self.may_act(), False
        if acting:
            fields = run_inputs.resolve(self.kube, {key: (action, call.obj)})
            offered = open_feed.feed.offer(key, action, fields)
            if offered is True:
                return
        with self._lock:
            open_feed.give_back(key)
            self._lock.notify_all()  # a quiet feed may close now
        if not ours:
            self._release(key, action, None)
        elif not acting:
            self._release(key, action, self.requeue_delay)
        elif offered is False:
            self.submit([call])  # closed meanwhile: the next run takes it
        else:
            self._answered(key, action, offered)  # answered without a run (an input could not be read)

    def idle(self) -> bool:
        """No call waits and no run is in flight."""
        with self._lock:
            return not self._waiting and not self._futures

    def waiting(self, provider: str) -> list:
        """The keys waiting for one of ``provider``'s runs (a copy)."""
        with self._lock:
            return list(self._waiting.get(provider, ()))

    def close(self) -> None:
        """Stop starting runs: waiting calls are let go (their keys requeued), runs in flight go on
        (taking nothing more)."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, {}
            self._since.clear()
            for open_feed in self._feeds.values():
                open_feed.feed.close()
            self._feeds.clear()
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
        """Close the feeds whose time is up and start each provider's run that may start now
        (lock held); seconds until one of them may."""
        now, wake = time.monotonic(), 1.0
        for provider, open_feed in list(self._feeds.items()):
            left = open_feed.closes_in(now, self.feed_window, self.gather_while_busy, self.batch_max)
            if left > 0:
                wake = min(wake, left)
                continue
            open_feed.feed.close()  # the module reads end of file; its run ends with its items
            del self._feeds[provider]
        for provider in list(self._waiting):
            busy = self._busy.get(provider, 0)
            if busy >= self.runs_in_flight:
                continue  # the run that ends hands its slot over
            if (
                busy
                and self.feeds
                and busy < self.runs_in_flight - 1  # the last slot is left to gather (polls)
                and provider not in self._feeds
                and self._heavy_waiting(provider)
            ):
                left = 0.0  # no run takes these creates: a run of their own, with a feed of its own
            elif busy:
                left = self.gather_while_busy - (now - self._since[provider])
            else:
                left = self.min_batch_interval - (now - self._last_start.get(provider, float("-inf")))
            if left > 0 and not self._full(provider):
                wake = min(wake, left)
                continue
            self._start(provider)
        return max(0.001, wake)

    def _heavy_waiting(self, provider: str) -> bool:
        return any(c.action.op != GET for c in self._waiting.get(provider, {}).values())

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
        now = self._last_start[provider] = time.monotonic()
        open_feed = None
        if self.feeds and heavy and not polls and provider not in self._feeds:
            # (a run with polls takes nothing more: its gets come after its creates, and would
            # wait for the feed to close)
            listed = {k for k, c in group.items() if c.action.op != GET}
            open_feed = OpenFeed(self.executor.new_feed(), now, now, set(listed), set(listed))
            self._feeds[provider] = open_feed
        future = self._runs.submit(self._run, provider, group, open_feed)
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

    def _run(self, provider: str, group: dict, open_feed: OpenFeed | None = None) -> None:
        """One provider's calls in one run, each answer delivered as soon as it is known, and
        the calls fed to it while it works (``open_feed``). Traced as one ``reconcile`` span
        (its runner runs, and each key's ``reconcile.apply``, are children)."""
        try:
            self._run_group(provider, group, open_feed)
        finally:
            if open_feed is not None:
                with self._lock:
                    if self._feeds.get(provider) is open_feed:
                        del self._feeds[provider]
                open_feed.feed.release()  # nothing more is taken (closed ones were answered)

    def _run_group(self, provider: str, group: dict, open_feed: OpenFeed | None) -> None:
        feed = open_feed.feed if open_feed is not None else None
        if self.owns is not None:
            for key in [k for k in group if not self.owns(k)]:
                call = group.pop(key)
                self._release(key, call.action, None)  # its shard is being given up: not ours soon
        if not group or not self.may_act():  # no longer leading (or not yet): the keys wait in the queue
            if feed is not None:
                self._refuse_feed(open_feed)
            for key, call in group.items():
                self._release(key, call.action, self.requeue_delay)
            return
        actions = {key: call.action for key, call in group.items()}
        fed = feed.fed_calls if feed is not None else dict  # the calls fed to the run so far
        attributes = {
            "proxy.provider": provider,
            "proxy.count": len(group),
            "proxy.ops": sorted({a.op for a in actions.values()}),
        }
        try:
            with tracing.tracer().start_as_current_span("reconcile", attributes=attributes):
                trace = tracing.current_context()  # each answer's status write is traced under it

                def answered(key: str, answer: Answer) -> None:
                    if open_feed is not None:
                        with self._lock:
                            open_feed.pending.discard(key)
                            if not open_feed.pending:
                                self._lock.notify_all()  # a quiet feed may close now
                    self._answered(key, actions.get(key) or feed.fed[key], answer, trace)

                # Everything the run needs is read now, from the objects it was decided from.
                fields = run_inputs.resolve(self.kube, {k: (c.action, c.obj) for k, c in group.items()})
                extra = {"feed": feed} if feed is not None else {}
                answers = self.executor.execute(actions, fields, on_answer=answered, **extra)
                if feed is not None:
                    feed.release()  # (the executor's already is) what it took is all it answers
                for key in [*actions, *fed()]:
                    answered(key, answers.get(key) or NO_ANSWER)
        except Exception as exc:
            if feed is not None:
                feed.release()  # nothing more taken: every call it took is settled below
            calls = [(key, call.action) for key, call in group.items()] + list(fed().items())
            errors.log_failure(log, "run of %d keys failed" % len(calls), exc)
            for key, action in calls:  # only the calls not answered yet
                if self.in_flight.settle(key, action):
                    self.queue.add_rate_limited(key)

    def _refuse_feed(self, open_feed: OpenFeed) -> None:
        """A run that does not start takes nothing: what was fed to it waits for another run (the
        feed leaves the batcher's ``_feeds`` when ``_run`` ends)."""
        open_feed.feed.release()
        for key, action in open_feed.feed.fed_calls().items():
            self._release(key, action, self.requeue_delay)

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
        self.queue.add_first(key)  # one status write from done: ahead of keys with their way ahead

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
