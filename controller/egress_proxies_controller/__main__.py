"""Command line of the controller: ``python -m egress_proxies_controller --help``.

Starts the health/metrics server, waits for the leader Lease (with ``--leader-elect``), starts
the informer, waits (bounded) for its first full list, then runs the manager until SIGTERM or
SIGINT, when it stops taking work, lets in-flight runs finish, releases the Lease and exits 0.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
import threading

from . import metrics as metrics_mod
from . import version
from .stop_signals import stop_on_signals
from .workqueue import WorkQueue

ENV_PROVIDERS_FILE = "EGRESS_PROXIES_PROVIDERS_FILE"
LEASE_API = "coordination.k8s.io/v1"


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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m egress_proxies_controller",
        description="Reconciles Proxy resources (crawl.example.com/v1alpha1) through the "
        "crawl.egress_proxies modules, run by ansible-runner in one batched run per provider per tick.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    announced = "%s %s" % (version.PRODUCT, version.package_version())
    p.add_argument("--version", action="version", version=announced)
    g = p.add_argument_group("cluster")
    g.add_argument("--kubeconfig", help="kubeconfig file (in-cluster config when unset)")
    g.add_argument("--context", help="kubeconfig context")
    g.add_argument("--namespace", help="watch Proxies in this namespace only (all namespaces when unset)")
    g = p.add_argument_group("providers and execution")
    g.add_argument(
        "--providers-file",
        default=os.environ.get(ENV_PROVIDERS_FILE),
        help="providers file (YAML), re-read when it changes (env %s)" % ENV_PROVIDERS_FILE,
    )
    g.add_argument(
        "--work-dir",
        default="/var/lib/egress-proxies/runner",
        help="ansible-runner private data directory (created 0700)",
    )
    g.add_argument(
        "--collections-path",
        default=os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
        help="where the crawl.egress_proxies collection is installed (ansible's default when unset)",
    )
    g.add_argument(
        "--runs-in-flight",
        type=int,
        default=3,
        help="ansible-runner runs at once per provider (and batches planned at once)",
    )
    g.add_argument(
        "--batch-max", type=int, default=500, help="most creates and deletes in one run (real backend work)"
    )
    g.add_argument(
        "--gather-while-busy",
        type=float,
        default=5.0,
        help="seconds a busy provider's new work waits for a run of it to end and hand its slot over "
        "(then it takes a free slot anyway): one run instead of many small ones; 0 starts at once",
    )
    g.add_argument(
        "--no-poll-rounds",
        dest="poll_in_rounds",
        action="store_false",
        help="poll each Running Proxy --running-poll after its last answer, instead of in one round "
        "per provider per interval (rounds: one run and one list answer a provider's whole fleet)",
    )
    g.add_argument(
        "--poll-batch-max",
        type=int,
        default=10000,
        help="most polls in one run (one list answers them, so a provider's whole poll round fits)",
    )
    g.add_argument("--tick", type=float, default=1.0, help="seconds between looks at the queue")
    g.add_argument(
        "--min-batch-interval",
        type=float,
        default=0.0,
        help="seconds between the starts of two batches: due work gathers into fewer, larger runs "
        "(each run costs an ansible-playbook start-up whatever it carries); the first batch after "
        "an idle spell starts at once",
    )
    g.add_argument(
        "--run-timeout", type=float, default=300.0, help="seconds before a run is abandoned (Transient)"
    )
    g.add_argument("--call-timeout", type=float, default=120.0, help="seconds for one Proxy's provider calls")
    g.add_argument("--module-concurrency", type=int, default=16, help="items worked on at once inside a run")
    g.add_argument(
        "--list-poll-threshold",
        type=int,
        default=10,
        help="poll a provider with one list instead of gets from this many polls per tick",
    )
    g.add_argument("--keep-artifacts", type=int, default=5, help="runner artifact directories kept")
    g.add_argument(
        "--ansible-fork-server",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start each run's ansible-playbook as a fork of one that imported ansible-core once "
        "(about half a run's CPU; docs/performance.md); off: ansible-runner starts it itself",
    )
    g = p.add_argument_group("intervals (blueprint §1)")
    g.add_argument("--provisioning-poll", type=float, default=10.0, help="poll while Provisioning")
    g.add_argument("--deletion-poll", type=float, default=10.0, help="poll while deleting")
    g.add_argument(
        "--requeue-now", type=float, default=1.0, help="quick requeue after a step that needs another"
    )
    g.add_argument("--quota-retry", type=float, default=300.0, help="retry after QuotaExceeded")
    g.add_argument("--running-poll", type=float, default=60.0, help="poll a Running proxy")
    g.add_argument(
        "--backoff-base", type=float, default=1.0, help="first error backoff (doubles per failure)"
    )
    g.add_argument("--backoff-max", type=float, default=300.0, help="longest error backoff")
    g = p.add_argument_group("orphan GC (leader only)")
    g.add_argument("--gc-interval", type=float, default=300.0, help="seconds between sweeps (0 disables)")
    g.add_argument(
        "--gc-jitter", type=float, default=0.2, help="fraction of the interval added or taken at random"
    )
    g.add_argument(
        "--gc-min-age", type=float, default=600.0, help="seconds before an orphan may be collected"
    )
    g.add_argument("--gc-dry-run", action="store_true", help="only log what would be deleted")
    g.add_argument(
        "--gc-own-installation",
        action="store_true",
        help="with --namespace: the providers file's installation belongs to this namespace alone, "
        "so GC may sweep it (without this flag a namespace-scoped controller never collects)",
    )
    g = p.add_argument_group("provider health monitor (leader only)")
    g.add_argument(
        "--health-check-interval",
        type=float,
        default=60.0,
        help="seconds between proxy_check rounds, written to ProviderHealth (0 disables)",
    )
    g.add_argument("--health-check-timeout", type=float, default=30.0, help="one timeout for a whole round")
    g = p.add_argument_group("proxy health engine (leader only)")
    g.add_argument(
        "--probe-interval", type=float, default=30.0, help="seconds between probe rounds (0 disables)"
    )
    g.add_argument("--probe-timeout", type=float, default=2.0, help="seconds for one probe")
    g.add_argument("--probe-concurrency", type=int, default=100, help="probes at once")
    g.add_argument(
        "--probe-url", default="", help="also GET this URL through each proxy (TCP connect only when unset)"
    )
    g = p.add_argument_group("proxy pools (leader only)")
    g.add_argument(
        "--pool-interval",
        type=float,
        default=1.0,
        help="seconds between looks at every ProxyPool (0 disables)",
    )
    g.add_argument(
        "--pool-target-retry",
        type=float,
        default=300.0,
        help="seconds a spread target whose member failed Permanent or Quota is skipped before a retry",
    )
    g = p.add_argument_group("process")
    g.add_argument("--metrics-addr", default=":8443", help="serve /metrics here ('0' to disable)")
    g.add_argument(
        "--metrics-cert-dir",
        default="",
        help="the metrics port's serving certificate: tls.crt and tls.key in this directory (a "
        "kubernetes.io/tls Secret mounted), read at start; self-signed when unset or it has neither",
    )
    g.add_argument(
        "--metrics-insecure",
        action="store_true",
        help="serve /metrics as plain HTTP to anyone who reaches the port; without it, HTTPS where "
        "each request's bearer token is checked with a TokenReview and a SubjectAccessReview "
        "(get on the non-resource URL /metrics, as the ClusterRole egress-proxies-metrics-reader grants)",
    )
    g.add_argument("--health-addr", default=":8081", help="serve /healthz and /readyz here")
    g.add_argument("--leader-elect", action="store_true", help="hold a Lease before reconciling")
    g.add_argument(
        "--leader-election-namespace",
        default=os.environ.get("POD_NAMESPACE", "default"),
        help="namespace of the Lease (env POD_NAMESPACE)",
    )
    g.add_argument("--leader-election-id", default="egress-proxies-controller", help="name of the Lease")
    g.add_argument(
        "--shards",
        type=int,
        default=1,
        help="split the Proxies into this many shards by a hash of their UID, each held on a Lease "
        "<id>-shard-<i> by one replica (needs --leader-elect; 1: one leader Lease reconciles all)",
    )
    g.add_argument(
        "--lease-duration", type=float, default=15.0, help="seconds a standby waits on an unrenewed Lease"
    )
    g.add_argument(
        "--renew-deadline",
        type=float,
        default=10.0,
        help="seconds without a renewal before the leader stops (runs killed); below --lease-duration",
    )
    g.add_argument("--retry-period", type=float, default=2.0, help="seconds between Lease attempts")
    g.add_argument(
        "--drain-timeout",
        type=float,
        default=60.0,
        help="on SIGTERM, seconds runs in flight may finish before they are cancelled (keep it "
        "below the Pod's terminationGracePeriodSeconds)",
    )
    g.add_argument(
        "--liveness-timeout",
        type=float,
        default=300.0,
        help="/healthz fails when the reconcile loop has not gone round for this long",
    )
    g.add_argument("--run-log", default="", help="append each run's start and end (JSON lines) here")
    g.add_argument(
        "--cache-sync-timeout", type=float, default=120.0, help="seconds to wait for the first list"
    )
    g.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    g.add_argument("--log-format", default="json", choices=["json", "text"])
    return p


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
    from .informer import Informer
    from .leader import LeaderElector
    from .manager import COMPONENT, Manager
    from .orphan_gc import OrphanGC
    from .pool_metrics import PoolMetrics
    from .pool_reconciler import PoolController
    from .provider_health import ProviderHealthMonitor
    from .providers_config import ProvidersConfig
    from .proxy_health import ProxyHealthEngine
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
    state = {"leader": not args.leader_elect, "config": None}
    sharding = None
    if sharded:
        from .sharding import Sharding

        sharding = Sharding(args.shards, informer, queue)

    def ready():
        config = state["config"]
        details = ["providers file: %s" % config.error] if config is not None and config.error else []
        manager = state.get("manager")
        if manager is not None and manager.missing:
            details += [
                "providers file: no provider %r (it made the instances of %d Proxies)" % item
                for item in sorted(manager.missing.items())
            ]
        if config is not None and config.in_use is None and state["leader"] and informer.synced.is_set():
            return False, details  # no good providers file yet: nothing is reconciled
        if sharding is not None:  # ready once it holds exactly its assigned shards (maybe none)
            coordinator = sharding.coordinator
            return informer.synced.is_set() and coordinator is not None and coordinator.settled(), details
        return (not state["leader"]) or informer.synced.is_set(), details

    def healthy() -> bool:
        manager = state.get("manager")  # standing by for the Lease: nothing to be stuck
        return manager is None or manager.healthy(args.liveness_timeout)

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
    elector = None
    if sharded:
        from .shard_leases import ShardCoordinator

        elector = ShardCoordinator(
            kube.coordination,
            args.leader_election_namespace,
            args.leader_election_id,
            identity,
            args.shards,
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
            heartbeat=os.path.join(args.work_dir, "heartbeat"),
            registry=metrics.registry,
            on_acquired=sharding.acquired,
            busy=sharding.busy,
        )
        sharding.coordinator = elector
        state["leader"] = True  # every replica reconciles (its own shards)
    elif args.leader_elect:
        elector = LeaderElector(
            kube.coordination,
            args.leader_election_namespace,
            args.leader_election_id,
            identity,
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
            heartbeat=os.path.join(args.work_dir, "heartbeat"),
        )
        log.info("waiting for the lease %s/%s", args.leader_election_namespace, args.leader_election_id)
        if not elector.acquire(stop):
            return 0
        state["leader"] = True
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

    def report_config(problem: str) -> None:
        """Once per new providers-file problem (and once when fixed): metric and one Event."""
        metrics.config_error.set(1 if problem else 0)
        if not args.leader_elect:
            return  # the Event goes on the controller's Lease; log line, metric and /readyz say it
        lease = {"metadata": {"name": args.leader_election_id, "namespace": args.leader_election_namespace}}
        if problem:
            kept = state["config"] is not None and state["config"].in_use
            message = "%s; %s" % (
                problem,
                "the last good version stays in use" if kept else "no provider calls until it is fixed",
            )
            kube.event(lease, "Warning", "ProvidersFileInvalid", message, COMPONENT, "Lease", LEASE_API)
        else:
            message = "providers file %s is valid again and in use" % args.providers_file
            kube.event(lease, "Normal", "ProvidersFileValid", message, COMPONENT, "Lease", LEASE_API)

    def report_missing(missing: dict) -> None:
        """Once per change: one Event on the Lease naming the providers gone from the file."""
        if not (args.leader_elect and missing):
            return
        lease = {"metadata": {"name": args.leader_election_id, "namespace": args.leader_election_namespace}}
        message = (
            "providers file %s has no provider %s, which made the instances of %s; those Proxies "
            "are left as they are until it is back"
            % (
                args.providers_file,
                ", ".join(repr(p) for p in sorted(missing)),
                ", ".join("%d Proxies" % missing[p] for p in sorted(missing)),
            )
        )
        kube.event(lease, "Warning", "ProvidersMissing", message, COMPONENT, "Lease", LEASE_API)

    config = ProvidersConfig(
        os.path.abspath(args.providers_file),
        os.path.join(args.work_dir, "config"),
        executor.validate,
        report_config,
    )
    state["config"] = config
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
        report_missing=report_missing,
        owns=sharding.owns if sharded else None,
    )
    state["manager"] = manager
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
        sharding.manager = manager

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
