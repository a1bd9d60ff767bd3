"""The Proxy controller: informer -> work queue -> reconcile(key) workers -> batcher -> answers.

controller-runtime's shape, each part owning its state and its lock. A few worker threads
(``workers``, like MaxConcurrentReconciles) pop due keys and run ``reconcile(key)``
(reconcile.py) on each: one snapshot, a pure decision, the writes with the snapshot's
resourceVersion, and what it wants next. A provider call goes to the batcher (batcher.py), which
groups calls per provider into runs and never plans; each answer comes back as an event (the
mailbox, then ``queue.add``) as soon as its item is done, and the key's next reconcile applies
it. The key is done at the queue when its reconcile returns (one reconcile per key at a time).

This loop reloads the providers file (a new ``Reconciler``, an immutable view of it, swapped by
reference), is the liveness heartbeat, and on stop drains: no new run starts, runs in flight end
(or are cancelled after ``drain_timeout``) and their delivered answers are written.
The manager is the one writer of a Proxy's status, ``Healthy`` and ``Ready`` included: the
health engine only records its probes in ``observations`` and queues a key whose verdict changed.
"""

from __future__ import annotations

import logging
import threading
import time

from ..kube import errors
from . import poll_rounds
from . import reconcile as rc
from . import reconciler as rec
from .batcher import Batcher
from .health_observations import HealthObservations
from .in_flight import InFlight
from .mailbox import Mailbox
from .model import GET
from .reconciler import Proxy, Reconciler
from .status_writes import StatusWrites

log = logging.getLogger("egress_proxies_controller.proxy.controller")
POP_SLACK = 0.25  # seconds after the first due key that a worker takes keys early (a poll round)
WORKER_KEYS = 100  # keys a worker takes at once: their calls reach the batcher together


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
        in_flight: InFlight | None = None,
        observations: HealthObservations | None = None,
        workers: int = 4,
        events=None,
    ):
        self.kube, self.informer, self.queue, self.executor = kube, informer, queue, executor
        self.settings = settings
        self.config = config  # providers_config.ProvidersConfig
        self.tick, self.workers = tick, workers
        self.poll_in_rounds = poll_in_rounds  # False: each Proxy polled running_poll after its answer
        self.metrics = metrics
        self.stop = threading.Event()
        self.may_act = may_act
        self.drain_timeout = drain_timeout
        self.report_missing = report_missing or (lambda missing: None)
        self.missing: dict = {}  # provider -> Proxies with an instance there, not in the file
        self.reconciler = self._reconciler()  # swapped whole on a configuration change
        self.last_progress = time.monotonic()  # the loop's heartbeat, for /healthz
        self.owns = owns  # with --shards: is the key in a shard this replica dispatches?
        self.observations = (
            observations if observations is not None else HealthObservations()
        )  # the health engine's, shared
        self.in_flight = (
            in_flight if in_flight is not None else InFlight()
        )  # shared with sharding's busy(shard), read-only there
        self.answers = Mailbox()
        self.batcher = Batcher(
            kube,
            executor,
            queue,
            self.answers,
            self.in_flight,
            runs_in_flight=runs_in_flight,
            batch_max=batch_max,
            poll_batch_max=poll_batch_max,
            gather_while_busy=gather_while_busy,
            min_batch_interval=min_batch_interval,
            may_act=may_act,
            owns=owns,
            requeue_delay=tick,
            feed_window=executor.feed_window() if hasattr(executor, "feed_window") else 0.0,
        )
        self.reconcile = rc.Reconcile(
            informer,
            StatusWrites(kube, informer.own_writes, events),  # the one writer of a Proxy's status
            self.answers,
            self.in_flight,
            self.observations,
            lambda: self.reconciler,
            metrics=metrics,
            owns=owns,
        )

    # -- config ------------------------------------------------------------------------

    def _reconciler(self) -> Reconciler:
        """A Reconciler over copies of the configuration in use (a read-only view)."""
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
        """The workers, and this loop's config reloads and heartbeat, until ``stop``; then drain."""
        workers = [
            threading.Thread(target=self._worker, name="reconcile-%d" % i, daemon=True)
            for i in range(self.workers)
        ]
        for worker in workers:
            worker.start()
        while not self.stop.is_set():
            self.last_progress = time.monotonic()
            self.reload_config()
            self.stop.wait(self.tick)
        self.batcher.close()  # no new run starts; the runs in flight go on
        if not self.batcher.drain(self.drain_timeout):
            log.warning("runs still in flight after %.0fs: cancelling them", self.drain_timeout)
            self.executor.abort_all()
            self.batcher.drain()
        for worker in workers:
            worker.join()
        for key in self.answers.waiting():  # the last answers are written before the process ends
            self._work(key, pop=False)
        log.info("manager stopped")

    def _worker(self) -> None:
        while not self.stop.is_set():
            if self.config.in_use is None:  # no good providers file yet: no provider calls
                self.stop.wait(self.tick)
                continue
            # Slack: the keys of one poll round come due microseconds apart, not together.
            keys = self.queue.pop_due(WORKER_KEYS, self.tick, POP_SLACK)
            self.process(keys)

    def process(self, keys: list) -> None:
        """Reconcile ``keys`` (handed out by the queue) one by one; their calls reach the
        batcher together, so keys due together share a run. When runs take more calls while
        they work (``Batcher.feeds``), a create or delete goes at once: a run under way starts
        it while the others' finalizers are still being written."""
        calls = []
        for key in keys:
            call = self._work(key)
            if call is None:
                continue
            if self.batcher.feeds and call.action.op != GET:
                self.batcher.submit([call])
            else:
                calls.append(call)
        if calls:
            self.batcher.submit(calls)

    def _work(self, key: str, pop: bool = True):
        """One reconcile, its outcome given to the queue; returns its call, if any (its key
        already in flight, so a reconcile meanwhile decides nothing new). ``pop``: the key was
        handed out by the queue (False: the drain's last answers)."""
        started = time.monotonic()
        try:
            outcome = self.reconcile(key)
        except Exception as exc:  # an API error on its write: this key backs off, alone
            errors.log_failure(log, "reconcile of %s failed" % key, exc)  # a 401: said once
            outcome = rc.Outcome(rc.DONE, rec.Step(backoff=True))
        if outcome.what == rc.CALL:
            self.in_flight.add(key, outcome.call.action)
        if pop:
            self.queue.done(key)
        self._after(key, outcome, time.monotonic() - started)
        return outcome.call

    def _after(self, key: str, outcome: rc.Outcome, seconds: float) -> None:
        """What the queue does with ``key`` after its reconcile."""
        if outcome.what == rc.REQUEUE:
            self.queue.add(key)
        elif outcome.what == rc.DROP:
            self.queue.forget(key)
        elif outcome.what == rc.DONE:
            self._finish(key, outcome.step, seconds)

    def _finish(self, key: str, step: rec.Step, seconds: float) -> None:
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

    # -- state for others ----------------------------------------------------------------

    def healthy(self, within: float) -> bool:
        """Liveness: the loop went round within the last ``within`` seconds (a stuck loop is not
        alive, whatever the HTTP server says)."""
        return time.monotonic() - self.last_progress < within

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no call waits and every run ended; False when ``timeout`` passed first."""
        return self.batcher.drain(timeout)

    def busy(self) -> bool:
        """A call waits, runs, or its answer was not applied yet (tests settle on this)."""
        return bool(len(self.in_flight) or len(self.answers) or not self.batcher.idle())
