"""Wiring: informer -> work queue -> reconciler -> executor -> status, with runs in flight bounded.

Each tick takes every due key (up to ``batch_max``), plans them, writes what needs no provider
call (finalizer first: it must be on the object before anything is created), runs all provider
calls of the tick in ONE executor run, then applies each answer and requeues. At most
``runs_in_flight`` batches run at once; a key is never in two batches (the queue guarantees it).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading

import yaml

from . import reconciler as rec
from .reconciler import Proxy, Reconciler

log = logging.getLogger("egress_proxies_controller.manager")
COMPONENT = "egress-proxies-controller"
# Fault injection for the crash-safety tests: "after-create" (or -get, -delete) makes the process
# die with SIGKILL's exit status right after such a call succeeded, before any status write.
FAULT_ENV = "EGRESS_PROXIES_CONTROLLER_FAULT"


def configured_provider_names(path: str) -> list:
    """The provider names of the providers file (the modules validate the rest)."""
    try:
        with open(path, encoding="utf-8") as handle:
            doc = yaml.safe_load(handle) or {}
    except (OSError, yaml.YAMLError) as exc:
        log.error("cannot read providers file %s: %s", path, exc)
        return []
    return [p.get("name") for p in doc.get("providers") or [] if isinstance(p, dict) and p.get("name")]


class Manager:
    def __init__(
        self,
        kube,
        informer,
        queue,
        executor,
        settings: rec.Settings,
        providers_file: str,
        *,
        runs_in_flight: int = 3,
        batch_max: int = 500,
        tick: float = 1.0,
        metrics=None,
    ):
        self.kube, self.informer, self.queue, self.executor = kube, informer, queue, executor
        self.settings = settings
        self.providers_file = providers_file
        self.runs_in_flight = runs_in_flight
        self.batch_max, self.tick = batch_max, tick
        self.metrics = metrics
        self.stop = threading.Event()
        self.pending = {}  # key -> follow-up Action chained by the last answer
        self._pending_lock = threading.Lock()
        self._slots = threading.Semaphore(runs_in_flight)
        self._config_mtime = None
        self.reconciler = Reconciler(settings, [])
        self.alive = True

    # -- config ------------------------------------------------------------------------

    def reload_config(self) -> None:
        try:
            mtime = os.stat(self.providers_file).st_mtime_ns
        except OSError:
            mtime = None
        if mtime == self._config_mtime:
            return
        self._config_mtime = mtime
        names = configured_provider_names(self.providers_file)
        self.reconciler = Reconciler(self.settings, names)
        log.info("providers file %s: providers %s", self.providers_file, ", ".join(names) or "none")
        for key in self.informer.cache_keys():  # a provider may have appeared: release latched Proxies
            self.queue.add(key)

    # -- loop --------------------------------------------------------------------------

    def run(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(self.runs_in_flight, thread_name_prefix="batch") as pool:
            while not self.stop.is_set():
                self.reload_config()
                if self.metrics is not None:
                    self.metrics.queue_depth.set(len(self.queue))
                if not self._slots.acquire(timeout=self.tick):
                    continue
                keys = self.queue.pop_due(self.batch_max, self.tick)
                if not keys:
                    self._slots.release()
                    continue
                pool.submit(self._batch, keys)
        log.info("manager stopped")

    def _batch(self, keys: list) -> None:
        try:
            self._process(keys)
        except Exception:
            log.exception("batch of %d keys failed", len(keys))
            for key in keys:
                self.queue.done(key)
                self.queue.add_rate_limited(key)
        finally:
            self._slots.release()

    def _process(self, keys: list) -> None:
        reconciler = self.reconciler
        actions = {}
        for key in keys:
            obj = self.informer.get(key)
            if obj is None:
                self.queue.forget(key)
                self.queue.done(key)
                continue
            with self._pending_lock:
                follow_up = self.pending.pop(key, None)
            if follow_up is not None:
                actions[key] = follow_up
                continue
            proxy = Proxy.from_object(obj)
            step = reconciler.plan(proxy)
            obj = self._commit(obj, step, lambda fresh: reconciler.plan(Proxy.from_object(fresh)).status)
            if step.action is not None and obj is not None and not step.remove_finalizer:
                actions[key] = step.action
            else:
                self._finish(key, step)
        if not actions:
            return
        answers = self.executor.execute(actions, self._create_fields)
        self._maybe_crash(actions, answers)
        for key, action in actions.items():
            answer = answers.get(key) or rec.Answer(ok=False, error_class=rec.TRANSIENT, message="no answer")
            obj = self.informer.get(key)
            if obj is None:
                self.queue.done(key)
                continue
            step = reconciler.apply(Proxy.from_object(obj), action, answer)
            self._commit(
                obj,
                step,
                lambda fresh, a=action, r=answer: reconciler.apply(Proxy.from_object(fresh), a, r).status,
            )
            if step.action is not None:
                with self._pending_lock:
                    self.pending[key] = step.action
                self.queue.done(key)
                self.queue.add(key)
            else:
                self._finish(key, step)

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
        self.queue.done(key)
        outcome = "backoff" if step.backoff else "requeue" if step.requeue_after is not None else "done"
        if self.metrics is not None:
            self.metrics.reconciles.labels(outcome).inc()
        if step.backoff:
            self.queue.add_rate_limited(key)
        elif step.requeue_after is not None:
            self.queue.forget(key)
            self.queue.add_after(key, step.requeue_after)
        else:
            self.queue.forget(key)

    def _commit(self, obj: dict, step: rec.Step, recompute_status):
        """Finalizer, then status, then Events; returns the latest object (None when gone)."""
        if step.add_finalizer:
            obj = self.kube.set_finalizer(obj, True)
            if obj is None:
                return None
            self.informer.store(obj)
        if step.status is not None:
            first = [True]

            def compute(current):
                if first[0]:
                    first[0] = False
                    return step.status
                return recompute_status(current)

            written = self.kube.write_status(obj, compute)
            if written is not None:
                obj = written
                self.informer.store(obj)
        for event_type, reason, message in step.events:
            self.kube.event(obj, event_type, reason, message, COMPONENT)
        if step.remove_finalizer:
            obj = self.kube.set_finalizer(obj, False)
            if obj is not None:
                self.informer.store(obj)
        return obj

    def _create_fields(self, key: str) -> dict:
        """Per-create module fields from the Proxy, with cloud-init resolved (never logged)."""
        obj = self.informer.get(key) or {}
        proxy = Proxy.from_object(obj)
        placement = proxy.spec.placement
        fields = {
            "namespace": proxy.namespace,
            "proxy_name": proxy.name,
            "port": proxy.spec.port,
            "placement": {
                "region": placement.get("region", ""),
                "zone": placement.get("zone", ""),
                "machine_type": placement.get("machineType", ""),
                "image": placement.get("image", ""),
            },
        }
        if proxy.spec.cloud_init_inline:
            fields["cloud_init"] = proxy.spec.cloud_init_inline
        elif proxy.spec.cloud_init_secret:
            name, secret_key = proxy.spec.cloud_init_secret
            fields["cloud_init"] = self.kube.secret_value(proxy.namespace, name, secret_key)
        return fields
