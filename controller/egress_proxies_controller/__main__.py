"""Command line of the controller: ``python -m egress_proxies_controller --help``.

Starts the health/metrics server, waits for the leader Lease (with ``--leader-elect``), starts
the informer, waits (bounded) for its first full list, then runs the manager until SIGTERM or
SIGINT, when it stops taking work, lets in-flight runs finish, releases the Lease and exits 0.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading

from . import metrics as metrics_mod
from .flags import ENV_PROVIDERS_FILE, parser
from .held_keys import HeldKeys
from .stop_signals import stop_on_signals
from .workqueue import WorkQueue


class JsonFormatter(logging.Formatter):
    def format(self, record):
        doc = {
            "ts": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc)


def main(argv=None) -> int:
    """Run the controller; a start-up mistake is one line naming its flag, exit code 2."""
    from .kube import StartupError

    try:
        return _main(argv)
    except StartupError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2


def _listen(flag: str, address: str, *serve_args):
    """``metrics.serve`` on ``address``, a refusal (in use, no such host, a bad port) a StartupError."""
    from .kube import StartupError

    try:
        return metrics_mod.serve(address, *serve_args)
    except (OSError, ValueError, OverflowError) as exc:
        raise StartupError(
            flag, "cannot listen on %r: %s" % (address, getattr(exc, "strerror", None) or exc)
        ) from None


def _main(argv) -> int:
    args = parser().parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter()
        if args.log_format == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    )
    logging.basicConfig(level=args.log_level, handlers=[handler])
    log = logging.getLogger("egress_proxies_controller")
    if not args.providers_file:
        print("error: --providers-file (or %s) is required" % ENV_PROVIDERS_FILE, file=sys.stderr)
        return 2
    if args.shards < 1 or (args.shards > 1 and not args.leader_elect):
        print(
            "error: --shards: must be 1, or more with --leader-elect (got %d)" % args.shards, file=sys.stderr
        )
        return 2
    sharded = args.shards > 1
    try:  # before anything that imports the collection's module_utils (--help, --version need none)
        from . import collection  # noqa: F401
    except ImportError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2

    from . import kube as kube_mod
    from . import tracing
    from .executor import Executor
    from .health_observations import HealthObservations
    from .informer import Informer
    from .leader import LeaderElector
    from .lease_reports import LeaseReports
    from .manager import Manager
    from .orphan_gc import OrphanGC
    from .pool_metrics import PoolMetrics
    from .pool_reconciler import PoolController
    from .provider_health import ProviderHealthMonitor
    from .providers_config import ProvidersConfig
    from .proxy_health import ProxyHealthEngine
    from .readiness import Readiness
    from .reconciler import Settings

    api_client = kube_mod.load(args.kubeconfig, args.context)  # first: a bad flag ends here
    tracer_provider = tracing.configure()  # OTEL_* decide; None: spans are no-ops
    stop = threading.Event()
    stop_on_signals(stop)  # SIGTERM/SIGINT, whichever thread takes them

    metrics = metrics_mod.Metrics()
    metrics.rest_client.instrument(api_client)
    kube = kube_mod.Kube(api_client)
    queue = WorkQueue(args.backoff_base, args.backoff_max, metrics=metrics.queue)
    informer = Informer(kube, args.namespace, queue.add)
    metrics.count_proxies(informer.objects)
    held = HeldKeys()  # the manager's, and sharding's to ask before a shard is given up
    shard_keys = None
    if sharded:
        from .sharding import ShardKeys

        shard_keys = ShardKeys(args.shards, informer, queue, held)
    readiness = Readiness(informer, leading=not args.leader_elect, liveness_timeout=args.liveness_timeout)
    ready, healthy = readiness.ready, readiness.healthy

    servers = []
    if args.metrics_addr not in ("", "0"):  # first: once /readyz answers, /metrics does too
        tls = authorizer = None
        if not args.metrics_insecure:
            from . import metrics_auth

            try:
                tls = metrics_auth.tls_context(args.metrics_cert_dir)
            except metrics_auth.CertificateError as exc:
                raise kube_mod.StartupError("--metrics-cert-dir", str(exc)) from None
            authorizer = metrics_auth.Authorizer(kube)
        servers.append(_listen("--metrics-addr", args.metrics_addr, metrics, ready, healthy, tls, authorizer))
    servers.append(_listen("--health-addr", args.health_addr, None, ready, healthy))

    identity = "%s_%s" % (socket.gethostname(), os.getpid())
    try:
        os.makedirs(args.work_dir, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise kube_mod.StartupError(
            "--work-dir", "cannot create %s: %s" % (args.work_dir, exc.strerror)
        ) from None
    elector = sharding = None
    lease = {
        "lease_duration": args.lease_duration,
        "renew_deadline": args.renew_deadline,
        "retry_period": args.retry_period,
        "heartbeat": os.path.join(args.work_dir, "heartbeat"),
    }
    lease_of = (kube.coordination, args.leader_election_namespace, args.leader_election_id, identity)
    if sharded:
        from .shard_leases import ShardCoordinator
        from .sharding import Sharding

        elector = ShardCoordinator(
            *lease_of,
            args.shards,
            **lease,
            registry=metrics.registry,
            on_acquired=shard_keys.acquired,
            busy=shard_keys.busy,
        )
        sharding = readiness.sharding = Sharding(shard_keys, elector)
        readiness.leading = True  # every replica reconciles (its own shards)
    elif args.leader_elect:
        elector = LeaderElector(*lease_of, **lease)
        log.info("waiting for the lease %s/%s", args.leader_election_namespace, args.leader_election_id)
        if not elector.acquire(stop):
            return 0
        readiness.leading = True
        metrics.is_leader.set(1)
    else:
        metrics.is_leader.set(1)  # without leader election this replica alone reconciles
    may_act = (elector.healthy if sharded else elector.leading) if elector is not None else (lambda: True)

    settings = Settings(
        args.provisioning_poll, args.deletion_poll, args.requeue_now, args.quota_retry, args.running_poll
    )
    executor = Executor(
        args.work_dir,
        None,  # set to the private copy of the last good providers file once there is one
        run_timeout=args.run_timeout,
        call_timeout=args.call_timeout,
        concurrency=args.module_concurrency,
        list_threshold=args.list_poll_threshold,
        keep_artifacts=args.keep_artifacts,
        collections_path=args.collections_path,
        metrics=metrics,
        may_run=may_act,
        identity=identity,
        run_log=args.run_log,
        heartbeat=elector.heartbeat if elector is not None else "",
        renew_deadline=args.renew_deadline,
        fork_server=args.ansible_fork_server,
    )
    metrics.runs_in_flight.set_function(executor.runs_in_flight)
    renew_stop = threading.Event()  # set only once all work has drained
    if elector is not None and not sharded:

        def lost() -> None:
            log.error("leadership lost: cancelling every run, then exiting")
            executor.abort_all()
            os._exit(1)

        elector.keep(renew_stop, lost)

    reports = LeaseReports(
        kube,
        metrics,
        leader_elect=args.leader_elect,
        lease_namespace=args.leader_election_namespace,
        lease_name=args.leader_election_id,
        path=args.providers_file,
    )
    config = ProvidersConfig(
        os.path.abspath(args.providers_file),
        os.path.join(args.work_dir, "config"),
        executor.validate,
        reports.config_problem,
    )
    readiness.config = reports.config = config
    observations = HealthObservations()  # the health engine records, the manager's reconcile writes
    manager = Manager(
        kube,
        informer,
        queue,
        executor,
        settings,
        config,
        runs_in_flight=args.runs_in_flight,
        batch_max=args.batch_max,
        poll_batch_max=args.poll_batch_max,
        poll_in_rounds=args.poll_in_rounds,
        gather_while_busy=args.gather_while_busy,
        tick=args.tick,
        min_batch_interval=args.min_batch_interval,
        metrics=metrics,
        may_act=may_act,
        drain_timeout=args.drain_timeout,
        report_missing=reports.missing,
        owns=sharding.owns if sharded else None,
        held=held,
        observations=observations,
    )
    readiness.manager = manager
    informer_thread = threading.Thread(target=informer.run, name="informer", daemon=True)
    informer_thread.start()
    if not informer.synced.wait(args.cache_sync_timeout):
        log.error("informer did not sync within %.0fs", args.cache_sync_timeout)
        # Stopped before the interpreter exits: a daemon thread still logging its retries while
        # the interpreter finalizes can hold stderr's lock, and Python then aborts (SIGABRT, -6)
        # instead of exiting 1 (seen once in CI).
        informer.stop()
        informer_thread.join(10)
        return 1
    log.info("cache synced: %d proxies", len(informer.cache_keys()))
    if sharded:

        def lost_shard() -> None:
            log.error("a shard lease was lost: cancelling every run, then exiting")
            executor.abort_all()
            os._exit(1)

        elector.start(lost_shard)
    worker = threading.Thread(target=manager.run, name="manager")
    worker.start()
    loops = [
        OrphanGC(
            executor,
            informer,
            metrics,
            interval=args.gc_interval,
            jitter=args.gc_jitter,
            min_age=args.gc_min_age,
            dry_run=args.gc_dry_run,
            namespace=args.namespace,
            own_installation=args.gc_own_installation,
            shards=sharding,
        ).start(),
        ProviderHealthMonitor(
            executor,
            kube,
            metrics,
            interval=args.health_check_interval,
            round_timeout=args.health_check_timeout,
        ).start(),
        ProxyHealthEngine(
            informer,
            kube,
            queue,
            observations,
            metrics,
            interval=args.probe_interval,
            timeout=args.probe_timeout,
            concurrency=args.probe_concurrency,
            url=args.probe_url,
            owns=sharding.owns if sharded else None,
        ).start(),
        PoolController(
            kube,
            informer,
            queue,
            lambda: config.names if config.in_use else None,
            PoolMetrics(metrics.registry),
            args.namespace,
            interval=args.pool_interval,
            resync=args.pool_resync,
            target_retry=args.pool_target_retry,
            may_act=may_act,
        ).start(),
    ]
    if sharded:  # ProviderHealth is per provider, not per Proxy: the holder of shard 0 writes it
        loops[1].gate = lambda: elector.dispatching(0)
    stop.wait()
    log.info("shutting down: finishing in-flight runs (at most --drain-timeout), renewing the lease")
    for loop in loops:
        loop.stop_event.set()
    manager.stop.set()
    queue.shutdown()
    informer.stop()
    worker.join()  # in-flight runs drained (or cancelled after --drain-timeout); the lease was renewed
    for loop in loops:
        loop.stop()
    renew_stop.set()
    if sharded:
        elector.stop()
    elif elector is not None:
        elector.release()
    executor.close()
    for server in servers:
        server.shutdown()
    if tracer_provider is not None:
        tracer_provider.shutdown()  # the last spans are exported before the process exits
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
