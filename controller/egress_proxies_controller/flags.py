"""The controller's command line: one function per flag group, in ``--help``'s order."""

from __future__ import annotations

import argparse
import os

from . import version

ENV_PROVIDERS_FILE = "EGRESS_PROXIES_PROVIDERS_FILE"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m egress_proxies_controller",
        description="Reconciles Proxy resources (crawl.example.com/v1alpha1) through the "
        "crawl.egress_proxies modules, run by ansible-runner in one batched run per provider per tick.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    announced = "%s %s" % (version.PRODUCT, version.package_version())
    p.add_argument("--version", action="version", version=announced)
    _cluster(p.add_argument_group("cluster"))
    _execution(p.add_argument_group("providers and execution"))
    _intervals(p.add_argument_group("intervals (blueprint §1)"))
    _orphan_gc(p.add_argument_group("orphan GC (leader only)"))
    _provider_health(p.add_argument_group("provider health monitor (leader only)"))
    _proxy_health(p.add_argument_group("proxy health engine (leader only)"))
    _pools(p.add_argument_group("proxy pools (leader only)"))
    _process(p.add_argument_group("process"))
    return p


def _numbers(g, *rows: tuple) -> None:
    """One flag a row: (flag, type, default, help)."""
    for flag, kind, default, text in rows:
        g.add_argument(flag, type=kind, default=default, help=text)


def _cluster(g) -> None:
    """Which API server and which Proxies."""
    g.add_argument("--kubeconfig", help="kubeconfig file (in-cluster config when unset)")
    g.add_argument("--context", help="kubeconfig context")
    g.add_argument("--namespace", help="watch Proxies in this namespace only (all namespaces when unset)")


def _execution(g) -> None:
    """The providers file and how their calls run (ansible-runner runs, batches, slots)."""
    g.add_argument(
        "--providers-file",
        default=os.environ.get(ENV_PROVIDERS_FILE),
        help="providers file (YAML), re-read when it changes (env %s)" % ENV_PROVIDERS_FILE,
    )
    g.add_argument(
        "--work-dir",
        default="/var/lib/egress-proxies/runner",
        help="ansible-runner private data directory: created 0700 when missing; an existing one must"
        " belong to root or this user, under directories nobody else can change (else it is refused)",
    )
    g.add_argument(
        "--collections-path",
        default=os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
        help="where the crawl.egress_proxies collection is installed (ansible's default when unset)",
    )
    _numbers(
        g,
        (
            "--runs-in-flight",
            int,
            3,
            "ansible-runner runs at once per provider (and batches planned at once)",
        ),
        ("--batch-max", int, 500, "most creates and deletes in one run (real backend work)"),
        (
            "--gather-while-busy",
            float,
            5.0,
            "seconds a busy provider's new work waits for a run of it to end and hand its slot over "
            "(then it takes a free slot anyway): one run instead of many small ones; 0 starts at once",
        ),
    )
    g.add_argument(
        "--poll-rounds",
        dest="poll_in_rounds",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="poll a provider's Running Proxies in one round per --running-poll (one run and one "
        "list answer its whole fleet); --no-poll-rounds: each Proxy --running-poll after its last answer",
    )
    _numbers(
        g,
        (
            "--poll-batch-max",
            int,
            10000,
            "most polls in one run (one list answers them, so a provider's whole poll round fits)",
        ),
        ("--tick", float, 1.0, "seconds between looks at the queue"),
        (
            "--workers",
            int,
            8,
            "Proxy reconciles at once (controller-runtime's MaxConcurrentReconciles): each one waits "
            "on its status write, so more workers write more statuses a second on a busy API server",
        ),
        (
            "--event-senders",
            int,
            2,
            "threads sending Events, off the reconciles' path (one object's Events keep their order)",
        ),
        (
            "--min-batch-interval",
            float,
            0.0,
            "seconds between the starts of two batches: due work gathers into fewer, larger runs "
            "(each run costs an ansible-playbook start-up whatever it carries); the first batch after "
            "an idle spell starts at once",
        ),
        ("--run-timeout", float, 300.0, "seconds before a run is abandoned (Transient)"),
        ("--call-timeout", float, 120.0, "seconds for one Proxy's provider calls"),
        ("--module-concurrency", int, 16, "items worked on at once inside a run"),
        (
            "--follow-starting",
            float,
            None,
            "seconds a run goes on reading the instances its creates left starting, answering each "
            "as soon as it runs: its Proxy is Ready then, not at a later run's poll (default 30, or "
            "a quarter of --run-timeout when that is less; 0: off; at most 600, less than --run-timeout)",
        ),
        (
            "--list-poll-threshold",
            int,
            10,
            "poll a provider with one list instead of gets from this many polls per tick",
        ),
        ("--keep-artifacts", int, 5, "runner artifact directories kept"),
    )
    g.add_argument(
        "--ansible-fork-server",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start each run's ansible-playbook as a fork of one that imported ansible-core once "
        "(about half a run's CPU; docs/performance.md); off: ansible-runner starts it itself",
    )


def _intervals(g) -> None:
    """When a Proxy is looked at again (blueprint §1)."""
    _numbers(
        g,
        ("--provisioning-poll", float, 10.0, "poll while Provisioning"),
        ("--deletion-poll", float, 10.0, "poll while deleting"),
        ("--requeue-now", float, 1.0, "quick requeue after a step that needs another"),
        ("--quota-retry", float, 300.0, "retry after QuotaExceeded"),
        ("--running-poll", float, 60.0, "poll a Running proxy"),
        ("--backoff-base", float, 1.0, "first error backoff (doubles per failure)"),
        ("--backoff-max", float, 300.0, "longest error backoff"),
    )


def _orphan_gc(g) -> None:
    """The orphan GC loop."""
    _numbers(
        g,
        ("--gc-interval", float, 300.0, "seconds between sweeps (0 disables)"),
        ("--gc-jitter", float, 0.2, "fraction of the interval added or taken at random"),
        ("--gc-min-age", float, 600.0, "seconds before an orphan may be collected"),
    )
    g.add_argument("--gc-dry-run", action="store_true", help="only log what would be deleted")
    g.add_argument(
        "--gc-own-installation",
        action="store_true",
        help="with --namespace: the providers file's installation belongs to this namespace alone, "
        "so GC may sweep it (without this flag a namespace-scoped controller never collects)",
    )


def _provider_health(g) -> None:
    """The provider health monitor loop."""
    _numbers(
        g,
        (
            "--health-check-interval",
            float,
            60.0,
            "seconds between proxy_check rounds, written to ProviderHealth (0 disables)",
        ),
        ("--health-check-timeout", float, 30.0, "one timeout for a whole round"),
    )


def _proxy_health(g) -> None:
    """The proxy health engine loop."""
    _numbers(
        g,
        ("--probe-interval", float, 30.0, "seconds between probe rounds (0 disables)"),
        ("--probe-timeout", float, 2.0, "seconds for one probe"),
        ("--probe-concurrency", int, 100, "probes at once"),
    )
    g.add_argument(
        "--probe-url", default="", help="also GET this URL through each proxy (TCP connect only when unset)"
    )


def _pools(g) -> None:
    """The ProxyPool loop."""
    _numbers(
        g,
        (
            "--pool-interval",
            float,
            1.0,
            "seconds between rounds of the ProxyPool loop, which reconcile the pools that changed "
            "or a member of which did (0 disables)",
        ),
        (
            "--pool-resync",
            float,
            300.0,
            "seconds after which a ProxyPool is reconciled again with no event: a safety net for "
            "what no watch tells (its endpoints Secret edited or removed by hand)",
        ),
        (
            "--pool-auth-recheck",
            float,
            5.0,
            "seconds between a ProxyPool's reads of its template.auth Secret's version (metadata "
            "only; Secrets are not watched): how soon new credentials start rolling its members",
        ),
        (
            "--pool-target-retry",
            float,
            300.0,
            "seconds a spread target whose member failed Permanent or Quota is skipped before a retry",
        ),
    )


def _process(g) -> None:
    """The process: its servers, leader election, shards, shutdown and logs."""
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
    _numbers(
        g,
        (
            "--shards",
            int,
            1,
            "split the Proxies into this many shards by a hash of their UID, each held on a Lease "
            "<id>-shard-<i> by one replica (needs --leader-elect; 1: one leader Lease reconciles all)",
        ),
        ("--lease-duration", float, 15.0, "seconds a standby waits on an unrenewed Lease"),
        (
            "--renew-deadline",
            float,
            10.0,
            "seconds without a renewal before the leader stops (runs killed); below --lease-duration",
        ),
        ("--retry-period", float, 2.0, "seconds between Lease attempts"),
        (
            "--drain-timeout",
            float,
            60.0,
            "on SIGTERM, seconds runs in flight may finish before they are cancelled (keep it "
            "below the Pod's terminationGracePeriodSeconds)",
        ),
        (
            "--liveness-timeout",
            float,
            300.0,
            "/healthz fails when the reconcile loop has not gone round for this long",
        ),
    )
    g.add_argument("--run-log", default="", help="append each run's start and end (JSON lines) here")
    _numbers(
        g,
        ("--cache-sync-timeout", float, 120.0, "seconds to wait for the first list"),
    )
    g.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    g.add_argument("--log-format", default="json", choices=["json", "text"])
