"""Command line of the controller: ``python -m egress_proxies_controller --help``.

Starts the health/metrics server, waits for the leader Lease (with ``--leader-elect``), starts
the informer, waits (bounded) for its first full list, then runs the manager until SIGTERM or
SIGINT, when it stops taking work, lets in-flight runs finish, releases the Lease and exits 0.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading

from .flags import ENV_PROVIDERS_FILE, parser
from .kube.workqueue import WorkQueue
from .proxy.in_flight import InFlight
from .stop_signals import stop_on_signals
from .telemetry import log_format
from .telemetry import metrics as metrics_mod

# Counts of things the controller does at once or in one run: 0 would stop it doing any.
COUNT_FLAGS = (
    "--runs-in-flight",
    "--batch-max",
    "--poll-batch-max",
    "--module-concurrency",
    "--workers",
    "--event-senders",
)
MAX_FOLLOW_SECONDS = 600.0  # proxy_instance's own limit for ``follow``
DEFAULT_FOLLOW_SECONDS = 30.0
EVENTS_CLOSE_TIMEOUT = 10.0  # seconds the Events still queued at a stop may take to be sent


def main(argv=None) -> int:
    """Run the controller; a start-up mistake is one line naming its flag, exit code 2."""
    from .kube.client import StartupError

    try:
        return _main(argv)
    except StartupError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2


def _listen(flag: str, address: str, *serve_args):
    """``metrics.serve`` on ``address``, a refusal (in use, no such host, a bad port) a StartupError."""
    from .kube.client import StartupError

    try:
        return metrics_mod.serve(address, *serve_args)
    except (OSError, ValueError, OverflowError) as exc:
        raise StartupError(
            flag, "cannot listen on %r: %s" % (address, getattr(exc, "strerror", None) or exc)
        ) from None


def _flags(args, *names: str, prefix: str = "") -> dict:
    """Keyword arguments from flags of the same name: ``prefix + name`` read as ``name``."""
    return {name: getattr(args, prefix + name) for name in names}


def _prefixed(args, prefix: str) -> dict:
    """Every flag named ``prefix...`` as a keyword argument without the prefix: a new flag of
    the group reaches its loop with no second list to keep (test_pool_flags.py)."""
    return {name[len(prefix) :]: value for name, value in vars(args).items() if name.startswith(prefix)}


def _exit_on_loss(log, executor, what: str):
    """What a lost Lease does: no run of ours may go on once another replica may act."""

    def lost() -> None:
        log.error("%s was lost: cancelling every run, then exiting", what)
        executor.abort_all()
        os._exit(1)

    return lost


def _main(argv) -> int:
    args = parser().parse_args(argv)
    _configure_logging(args)
    problem = _usage_problem(args)
    if problem:
        print("error: %s" % problem, file=sys.stderr)
        return 2
    try:  # before anything that imports the collection's module_utils (--help, --version need none)
        from . import collection  # noqa: F401
    except ImportError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    return _run(args)


def _configure_logging(args) -> None:
    """Log lines as ``--log-format`` says, with trace and span ids (telemetry/log_format.py)."""
    logging.basicConfig(level=args.log_level, handlers=[log_format.handler(args.log_format)])


def follow_window(args) -> float:
    """``--follow-starting``, or its default: 30 s, or a quarter of ``--run-timeout`` when that
    is less (a short run timeout set alone is never refused for a window nobody asked for)."""
    if args.follow_starting is not None:
        return args.follow_starting
    return min(DEFAULT_FOLLOW_SECONDS, args.run_timeout / 4.0)


def _usage_problem(args) -> str:
    """What makes the flags unusable together ("" when nothing does)."""
    if not args.providers_file:
        return "--providers-file (or %s) is required" % ENV_PROVIDERS_FILE
    if args.shards < 1 or (args.shards > 1 and not args.leader_elect):
        return "--shards: must be 1, or more with --leader-elect (got %d)" % args.shards
    for flag in COUNT_FLAGS:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value < 1:
            return "%s: must be at least 1 (got %d)" % (flag, value)
    if args.follow_starting is not None and not 0 <= args.follow_starting <= min(
        MAX_FOLLOW_SECONDS, args.run_timeout - 1
    ):
        return "--follow-starting: must be from 0 (off) to %g seconds, less than --run-timeout (got %g)" % (
            min(MAX_FOLLOW_SECONDS, args.run_timeout - 1),
            args.follow_starting,
        )
    return ""


def _run(args) -> int:
    """Build the parts in dependency order (nothing is wired after it is built), run until
    SIGTERM or SIGINT, then drain and stop them in reverse."""
    from .config.providers_file import ProvidersConfig
    from .kube import client as kube_mod
    from .kube import credentials
    from .kube.event_recorder import EventRecorder
    from .kube.informer import Informer
    from .proxy.controller import ProxyController
    from .proxy.health_observations import HealthObservations
    from .readiness import Readiness
    from .runs import work_dir
    from .telemetry import tracing

    log = logging.getLogger("egress_proxies_controller")
    api_client = kube_mod.load(args.kubeconfig, args.context)  # first: a bad flag ends here
    tracer_provider = tracing.configure()  # OTEL_* decide; None: spans are no-ops
    stop = threading.Event()
    stop_on_signals(stop)  # SIGTERM/SIGINT, whichever thread takes them

    metrics = metrics_mod.Metrics()
    metrics.rest_client.instrument(api_client)
    refusal = credentials.Refusal()  # a 401: said once, not ready, then exit (as unreachable)
    refusal.watch(api_client)
    refusal.then(stop.set)  # without a Lease to lose: stop as on SIGTERM, then exit 1
    kube = kube_mod.Kube(api_client)
    queue = WorkQueue(args.backoff_base, args.backoff_max, metrics=metrics.queue)
    informer = Informer(kube, args.namespace, queue.add)
    metrics.count_proxies(informer.objects)
    in_flight = InFlight()  # the batcher's calls under way; sharding asks it before giving a shard up
    readiness = Readiness(informer, leading=not args.leader_elect, liveness_timeout=args.liveness_timeout)
    readiness.refusal = refusal
    servers = _servers(args, kube, metrics, readiness)
    identity = "%s_%s" % (socket.gethostname(), os.getpid())
    try:  # root runs what it holds: ours, or the controller does not start (runs/work_dir.py)
        work_dir.prepare(args.work_dir)
    except OSError as exc:
        raise kube_mod.StartupError(
            "--work-dir", "cannot create %s: %s" % (args.work_dir, exc.strerror)
        ) from None
    except work_dir.UnsafeWorkDir as exc:
        raise kube_mod.StartupError("--work-dir", str(exc)) from None
    elector, sharding = _leases(args, kube, metrics, readiness, informer, queue, in_flight, identity)
    if elector is not None and sharding is None:
        log.info("waiting for the lease %s/%s", args.leader_election_namespace, args.leader_election_id)
        try:
            if not elector.acquire(stop):
                return 1 if refusal.is_set() else 0
        except credentials.CredentialsRefused:
            return 1  # said once by kube/credentials.py; a restart reads a fresh token
        readiness.leading = True
    if elector is None or sharding is None:
        metrics.is_leader.set(1)  # this replica alone reconciles (the leader, or without election)
    may_act = _may_act(elector, sharding)
    executor = _executor(args, metrics, may_act, elector, identity)
    renew_stop = threading.Event()  # set only once all work has drained
    if elector is not None and sharding is None:
        elector.keep(renew_stop, _exit_on_loss(log, executor, "leadership"))
    config, reports = _providers(args, kube, metrics, executor, ProvidersConfig)
    readiness.config = config
    observations = HealthObservations()  # the health engine records, the Proxy controller writes
    events = EventRecorder(kube.event, senders=args.event_senders)  # sent off the reconciles' path
    manager = ProxyController(
        kube,
        informer,
        queue,
        executor,
        _settings(args),
        config,
        **_flags(args, "runs_in_flight", "batch_max", "poll_batch_max", "poll_in_rounds", "tick"),
        **_flags(args, "gather_while_busy", "min_batch_interval", "drain_timeout", "workers"),
        events=events,
        metrics=metrics,
        may_act=may_act,
        report_missing=reports.missing,
        owns=sharding.owns if sharding is not None else None,
        in_flight=in_flight,
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
    if sharding is not None:
        elector.start(_exit_on_loss(log, executor, "a shard lease"))
    worker = threading.Thread(target=manager.run, name="manager")
    worker.start()
    loops = _loops(
        args, kube, metrics, informer, queue, executor, config, sharding, elector, may_act, observations
    )
    stop.wait()
    log.info("shutting down: finishing in-flight runs (at most --drain-timeout), renewing the lease")
    for loop in loops:
        loop.stop_event.set()
    manager.stop.set()
    queue.shutdown()
    informer.stop()
    worker.join()  # in-flight runs drained (or cancelled after --drain-timeout); the lease was renewed
    if not events.close(EVENTS_CLOSE_TIMEOUT):
        log.warning("%d Events were not sent before the process stopped", events.pending())
    for loop in loops:
        loop.stop()
    renew_stop.set()
    if sharding is not None:
        elector.stop()
    elif elector is not None:
        elector.release()
    executor.close()
    for server in servers:
        server.shutdown()
    if tracer_provider is not None:
        tracer_provider.shutdown()  # the last spans are exported before the process exits
    log.info("stopped")
    return 1 if refusal.is_set() else 0


def _servers(args, kube, metrics, readiness) -> list:
    """The /metrics server (authenticated unless --metrics-insecure) and the probes' server."""
    from .kube.client import StartupError

    ready, healthy = readiness.ready, readiness.healthy
    servers = []
    if args.metrics_addr not in ("", "0"):  # first: once /readyz answers, /metrics does too
        tls = authorizer = None
        if not args.metrics_insecure:
            from .telemetry import metrics_auth

            try:
                tls = metrics_auth.tls_context(args.metrics_cert_dir)
            except metrics_auth.CertificateError as exc:
                raise StartupError("--metrics-cert-dir", str(exc)) from None
            authorizer = metrics_auth.Authorizer(kube)
        servers.append(_listen("--metrics-addr", args.metrics_addr, metrics, ready, healthy, tls, authorizer))
    servers.append(_listen("--health-addr", args.health_addr, None, ready, healthy))
    return servers


def _leases(args, kube, metrics, readiness, informer, queue, in_flight, identity) -> tuple:
    """(elector, sharding): the shard coordinator and its Sharding with ``--shards`` above 1, a
    leader elector (not yet holding the Lease) with ``--leader-elect``, or neither."""
    lease = dict(
        _flags(args, "lease_duration", "renew_deadline", "retry_period"),
        heartbeat=os.path.join(args.work_dir, "heartbeat"),
    )
    lease_of = (kube.coordination, args.leader_election_namespace, args.leader_election_id, identity)
    if args.shards > 1:
        from .sharding.keys import Sharding, ShardKeys
        from .sharding.leases import ShardCoordinator

        keys = ShardKeys(args.shards, informer, queue, in_flight)
        coordinator = ShardCoordinator(
            *lease_of,
            args.shards,
            **lease,
            registry=metrics.registry,
            on_acquired=keys.acquired,
            busy=keys.busy,
        )
        sharding = readiness.sharding = Sharding(keys, coordinator)
        readiness.leading = True  # every replica reconciles (its own shards)
        return coordinator, sharding
    if args.leader_elect:
        from .kube.leader import LeaderElector

        return LeaderElector(*lease_of, **lease), None
    return None, None


def _may_act(elector, sharding):
    """Whether this replica may act now: it holds its shards' Leases, it leads, or (without
    election) always."""
    if elector is None:
        return lambda: True
    return elector.healthy if sharding is not None else elector.leading


def _executor(args, metrics, may_act, elector, identity):
    from .runs import identity as run_identity
    from .runs.executor import Executor

    executor = Executor(
        args.work_dir,
        None,  # set to the private copy of the last good providers file once there is one
        **_flags(args, "run_timeout", "call_timeout", "keep_artifacts", "collections_path", "renew_deadline"),
        run_log=args.run_log,
        concurrency=args.module_concurrency,
        follow=follow_window(args),
        list_threshold=args.list_poll_threshold,
        metrics=metrics,
        may_run=may_act,
        identity=identity,
        heartbeat=elector.heartbeat if elector is not None else "",
        fork_server=args.ansible_fork_server,
        identity_env=run_identity.run_environment(args.kubeconfig, args.context),
    )
    metrics.runs_in_flight.set_function(executor.runs_in_flight)
    return executor


def _providers(args, kube, metrics, executor, providers_config) -> tuple:
    """(the providers file as the controller uses it, the reports of its problems)."""
    from .config.lease_reports import LeaseReports
    from .runs import identity

    reports = LeaseReports(
        kube,
        metrics,
        leader_elect=args.leader_elect,
        lease_namespace=args.leader_election_namespace,
        lease_name=args.leader_election_id,
        path=args.providers_file,
    )
    config = providers_config(
        os.path.abspath(args.providers_file),
        os.path.join(args.work_dir, "config"),
        executor.validate,
        reports.config_problem,
        describe=lambda entry: identity.describe(entry, executor.identity_env),
    )
    reports.config = config
    return config, reports


def _settings(args):
    from .proxy.reconciler import Settings

    return Settings(
        args.provisioning_poll, args.deletion_poll, args.requeue_now, args.quota_retry, args.running_poll
    )


def _loops(
    args, kube, metrics, informer, queue, executor, config, sharding, elector, may_act, observations
) -> list:
    """The periodic loops beside the Proxy controller, started."""
    from .loops.orphan_gc import OrphanGC
    from .loops.provider_checks import ProviderHealthMonitor
    from .loops.proxy_probes import ProxyHealthEngine
    from .pool.controller import PoolController
    from .telemetry.pool_metrics import PoolMetrics

    checks = ProviderHealthMonitor(
        executor,
        kube,
        metrics,
        interval=args.health_check_interval,
        round_timeout=args.health_check_timeout,
    )
    if sharding is not None:  # ProviderHealth is per provider, not per Proxy: shard 0's holder writes it
        checks.gate = lambda: elector.dispatching(0)
    return [
        OrphanGC(
            executor,
            informer,
            metrics,
            **_flags(args, "interval", "jitter", "min_age", "dry_run", "own_installation", prefix="gc_"),
            namespace=args.namespace,
            shards=sharding,
        ).start(),
        checks.start(),
        ProxyHealthEngine(
            informer,
            kube,
            queue,
            observations,
            metrics,
            **_flags(args, "interval", "timeout", "concurrency", "url", prefix="probe_"),
            owns=sharding.owns if sharding is not None else None,
        ).start(),
        PoolController(
            kube,
            informer,
            lambda: config.names if config.in_use else None,
            PoolMetrics(metrics.registry),
            args.namespace,
            **_prefixed(args, "pool_"),
            may_act=may_act,
        ).start(),
    ]


if __name__ == "__main__":
    sys.exit(main())
