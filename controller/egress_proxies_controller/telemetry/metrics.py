"""Prometheus metrics of the controller, and the tiny HTTP server for /metrics, /healthz, /readyz.

Module processes are short-lived, so provider-call figures arrive as telemetry records in the
module results; they become ``egress_proxies_provider_*`` series here.
"""

from __future__ import annotations

import http.server
import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .. import version
from . import children_cpu
from .poll_gaps import PollGaps
from .proxy_metrics import ProxyConditions
from .queue_metrics import WorkQueueMetrics
from .rest_metrics import RestClientMetrics

CONTROLLER = "proxy"  # the controller label controller-runtime puts on its reconcile series
RESULTS = ("success", "error", "requeue_after")  # what ProxyController._finish reports


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        self.provider_ops = Counter(
            "egress_proxies_provider_operations_total",
            "Provider calls made by the modules.",
            ["provider", "op", "class"],
            registry=self.registry,
        )
        self.provider_seconds = Histogram(
            "egress_proxies_provider_operation_duration_seconds",
            "Duration of provider calls.",
            ["provider", "op"],
            registry=self.registry,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
        )
        self.runner_runs = Counter(
            "egress_proxies_runner_runs_total",
            "ansible-runner runs by final status.",
            ["status"],
            registry=self.registry,
        )
        self.runner_items_fed = Counter(
            "egress_proxies_runner_items_fed_total",
            "Creates and deletes handed to runs already under way (their instance_stream).",
            registry=self.registry,
        )
        self.runner_seconds = Histogram(
            "egress_proxies_runner_run_duration_seconds",
            "Duration of ansible-runner runs.",
            registry=self.registry,
            buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300),
        )
        self.runner_phase_seconds = Histogram(
            "egress_proxies_runner_phase_seconds",
            "Seconds of a runner run by phase: startup (until the first module starts), module "
            "(the providers' work) and finish (the wind-down).",
            ["phase"],
            registry=self.registry,
            buckets=(0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300),
        )
        self.rest_client = RestClientMetrics(self.registry)
        # controller-runtime's reconcile series; a "reconcile" here is one key's step, from
        # being handed out by the queue until its outcome is applied.
        self.reconciles = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=self.registry,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=self.registry,
        )
        # Zero from the start, as controller-runtime initialises them: a rate over a series that
        # appears only with the first error is no rate at all (alerts on it would never fire).
        for result in RESULTS:
            self.reconciles.labels(CONTROLLER, result)
        self.reconcile_errors.labels(CONTROLLER)
        self.reconcile_seconds = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            registry=self.registry,
            buckets=(0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300),
        )
        self.queue = WorkQueueMetrics(self.registry, CONTROLLER)
        self.poll_gaps = PollGaps(self.registry)
        # process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds, ...
        ProcessCollector(registry=self.registry)
        self.registry.register(children_cpu.ChildrenCpu())
        self.runs_in_flight = Gauge(
            "egress_proxies_runner_runs_in_flight",
            "ansible-runner runs started and not finished yet.",
            registry=self.registry,
        )
        self.gc_deleted = Counter(
            "egress_proxies_gc_deleted_total", "Orphans deleted by GC.", ["provider"], registry=self.registry
        )
        self.gc_would_delete = Counter(
            "egress_proxies_gc_would_delete_total",
            "Orphans a dry-run GC would delete.",
            ["provider"],
            registry=self.registry,
        )
        self.gc_kept = Counter(
            "egress_proxies_gc_kept_total",
            "Listed instances GC kept, by reason.",
            ["provider", "reason"],
            registry=self.registry,
        )
        self.gc_skipped = Counter(
            "egress_proxies_gc_skipped_total",
            "Providers skipped by a sweep (list failed).",
            ["provider"],
            registry=self.registry,
        )
        self.provider_ready = Gauge(
            "egress_proxies_provider_ready",
            "1 when every target of a provider is ready.",
            ["provider"],
            registry=self.registry,
        )
        self.provider_target_ready = Gauge(
            "egress_proxies_provider_target_ready",
            "1 when a target is ready.",
            ["provider", "target"],
            registry=self.registry,
        )
        self.probe_seconds = Histogram(
            "egress_proxies_probe_duration_seconds",
            "Latency of proxy probes.",
            ["result"],
            registry=self.registry,
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5),
        )
        self.probe_round_seconds = Gauge(
            "egress_proxies_probe_round_seconds", "Duration of the last probe round.", registry=self.registry
        )
        self.config_error = Gauge(
            "egress_proxies_providers_file_error",
            "1 while the providers file has a problem (the last good version stays in use).",
            registry=self.registry,
        )
        self.is_leader = Gauge(
            "egress_proxies_leader",
            "1 when this replica holds the leader Lease, or runs without leader election (then it is the "
            "only one that reconciles).",
            registry=self.registry,
        )
        # Always 1; the version is the label, as Prometheus' *_build_info convention has it.
        self.build_info = Gauge(
            "egress_proxies_controller_build_info",
            "The controller's version (the collection's and the image tag's).",
            ["version"],
            registry=self.registry,
        )
        self.build_info.labels(version.package_version()).set(1)

    def count_proxies(self, objects) -> None:
        """Report ``egress_proxies_proxies`` and ``..._not_ready_seconds`` from ``objects()`` (the
        informer's cache) at every scrape."""
        self.registry.register(ProxyConditions(objects))

    def provider_call(self, record: dict) -> None:
        provider, op = record.get("provider", ""), record.get("op", "")
        self.provider_ops.labels(provider, op, record.get("class", "")).inc()
        self.provider_seconds.labels(provider, op).observe(float(record.get("duration_seconds") or 0))

    def reconciled(self, result: str, seconds: float) -> None:
        """One key's step: ``result`` is one of RESULTS."""
        self.reconciles.labels(CONTROLLER, result).inc()
        if result == "error":
            self.reconcile_errors.labels(CONTROLLER).inc()
        self.reconcile_seconds.labels(CONTROLLER).observe(seconds)

    def runner_run(self, status: str, seconds: float, phases: dict | None = None) -> None:
        self.runner_runs.labels(status).inc()
        self.runner_seconds.observe(seconds)
        for phase, phase_seconds in (phases or {}).items():
            self.runner_phase_seconds.labels(phase).observe(phase_seconds)

    def items_fed(self, count: int) -> None:
        self.runner_items_fed.inc(count)

    def render(self) -> bytes:
        return generate_latest(self.registry)


def serve(
    address: str, metrics: Metrics | None, ready, healthy, tls=None, authorizer=None
) -> http.server.ThreadingHTTPServer:
    """Serve /metrics (when ``metrics``), /healthz and /readyz on ``host:port`` in a daemon thread.

    ``/readyz`` lists the details ``ready`` gives (e.g. a providers-file problem) before its verdict.
    With ``tls`` (an ``ssl.SSLContext``) the port speaks TLS only (each connection's handshake in
    its own thread, so a client that never completes one holds no other); with ``authorizer``
    (metrics_auth.Authorizer) every request must be authenticated and authorised first."""
    host, _sep, port = address.rpartition(":")

    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = 30  # seconds a connection may stay silent (TLS handshake included)

        def do_GET(self):
            path = self.path.partition("?")[0]
            if authorizer is not None:
                code, reason = authorizer.check(self.headers.get("Authorization"), path)
                if code != 200:
                    self._send(code, (reason + "\n").encode())
                    return
            if path == "/metrics" and metrics is not None:
                self._send(200, metrics.render(), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                ok = healthy()
                self._send(200 if ok else 500, b"ok\n" if ok else b"unhealthy\n")
            elif path == "/readyz":
                answer = ready()  # a bool, or (bool, [detail lines])
                ok, details = answer if isinstance(answer, tuple) else (answer, [])
                body = "".join(line + "\n" for line in [*details, "ok" if ok else "not ready"])
                self._send(200 if ok else 503, body.encode())
            else:
                self._send(404, b"not found\n")

        def _send(self, code, body, content_type="text/plain; charset=utf-8"):
            self.send_response(code)
            if code == 401:
                self.send_header("WWW-Authenticate", 'Bearer realm="egress-proxies-controller"')
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        def get_request(self):
            sock, peer = super().get_request()
            if tls is not None:  # the handshake happens on the first read, in the handler's thread
                sock = tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
            return sock, peer

        def handle_error(self, request, client_address):
            pass  # a client that hangs up or fails its handshake is no concern of the log

    server = Server((host or "0.0.0.0", int(port)), Handler)
    threading.Thread(target=server.serve_forever, name="http-%s" % port, daemon=True).start()
    return server
