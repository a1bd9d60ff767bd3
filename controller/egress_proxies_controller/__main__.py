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
import signal
import socket
import sys
import threading

from . import metrics as metrics_mod
from .reconciler import Settings
from .workqueue import WorkQueue

ENV_PROVIDERS_FILE = "EGRESS_PROXIES_PROVIDERS_FILE"


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


def package_version() -> str:
    """The installed package's version (controller/pyproject.toml, = the collection's)."""
    from importlib import metadata

    try:
        return metadata.version("egress-proxies-controller")
    except metadata.PackageNotFoundError:  # a source tree on PYTHONPATH, never pip-installed
        return "unknown (not installed: pip install ./controller)"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m egress_proxies_controller",
        description="Reconciles Proxy resources (crawl.example.com/v1alpha1) through the "
        "crawl.egress_proxies modules, run by ansible-runner in one batched run per tick.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--version", action="version", version="egress-proxies-controller " + package_version())
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
    g.add_argument("--runs-in-flight", type=int, default=3, help="ansible-runner runs at once")
    g.add_argument("--batch-max", type=int, default=500, help="most Proxies in one run")
    g.add_argument("--tick", type=float, default=1.0, help="seconds between looks at the queue")
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
    g = p.add_argument_group("process")
    g.add_argument("--metrics-addr", default=":8080", help="serve /metrics here ('0' to disable)")
    g.add_argument("--health-addr", default=":8081", help="serve /healthz and /readyz here")
    g.add_argument("--leader-elect", action="store_true", help="hold a Lease before reconciling")
    g.add_argument(
        "--leader-election-namespace",
        default=os.environ.get("POD_NAMESPACE", "default"),
        help="namespace of the Lease (env POD_NAMESPACE)",
    )
    g.add_argument("--leader-election-id", default="egress-proxies-controller", help="name of the Lease")
    g.add_argument(
        "--cache-sync-timeout", type=float, default=120.0, help="seconds to wait for the first list"
    )
    g.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    g.add_argument("--log-format", default="json", choices=["json", "text"])
    return p


def main(argv=None) -> int:
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

    from . import kube as kube_mod
    from .executor import Executor
    from .informer import Informer
    from .leader import LeaderElector
    from .manager import Manager
    from .orphan_gc import OrphanGC
    from .provider_health import ProviderHealthMonitor
    from .proxy_health import ProxyHealthEngine

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_a: stop.set())
    signal.signal(signal.SIGINT, lambda *_a: stop.set())

    metrics = metrics_mod.Metrics()
    api_client = kube_mod.load(args.kubeconfig, args.context)
    kube = kube_mod.Kube(api_client)
    queue = WorkQueue(args.backoff_base, args.backoff_max)
    informer = Informer(kube, args.namespace, queue.add)
    state = {"leader": not args.leader_elect}

    def ready() -> bool:
        return (not state["leader"]) or informer.synced.is_set()

    servers = [metrics_mod.serve(args.health_addr, None, ready, lambda: True)]
    if args.metrics_addr not in ("", "0"):
        servers.append(metrics_mod.serve(args.metrics_addr, metrics, ready, lambda: True))

    elector = None
    if args.leader_elect:
        identity = "%s_%s" % (socket.gethostname(), os.getpid())
        elector = LeaderElector(
            kube.coordination, args.leader_election_namespace, args.leader_election_id, identity
        )
        log.info("waiting for the lease %s/%s", args.leader_election_namespace, args.leader_election_id)
        if not elector.acquire(stop):
            return 0
        state["leader"] = True
        metrics.is_leader.set(1)
        elector.keep(stop, lambda: (log.error("leadership lost: exiting"), os._exit(1)))

    settings = Settings(
        args.provisioning_poll, args.deletion_poll, args.requeue_now, args.quota_retry, args.running_poll
    )
    executor = Executor(
        args.work_dir,
        os.path.abspath(args.providers_file),
        run_timeout=args.run_timeout,
        call_timeout=args.call_timeout,
        concurrency=args.module_concurrency,
        list_threshold=args.list_poll_threshold,
        keep_artifacts=args.keep_artifacts,
        collections_path=args.collections_path,
        metrics=metrics,
    )
    manager = Manager(
        kube,
        informer,
        queue,
        executor,
        settings,
        args.providers_file,
        runs_in_flight=args.runs_in_flight,
        batch_max=args.batch_max,
        tick=args.tick,
        metrics=metrics,
    )
    threading.Thread(target=informer.run, name="informer", daemon=True).start()
    if not informer.synced.wait(args.cache_sync_timeout):
        log.error("informer did not sync within %.0fs", args.cache_sync_timeout)
        return 1
    log.info("cache synced: %d proxies", len(informer.cache_keys()))
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
        ).start(),
    ]
    stop.wait()
    log.info("shutting down: finishing in-flight runs")
    for loop in loops:
        loop.stop_event.set()
    manager.stop.set()
    queue.shutdown()
    informer.stop()
    worker.join()
    for loop in loops:
        loop.stop()
    if elector is not None:
        elector.release()
    for server in servers:
        server.shutdown()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
