"""Prometheus series per ProxyPool, registered in the controller's registry (telemetry/metrics.py)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge


class PoolMetrics:
    def __init__(self, registry):
        def series(kind, name: str, text: str, *extra: str):
            """``egress_proxies_pool_<name>``, labelled by namespace and pool (and ``extra``)."""
            return kind("egress_proxies_pool_" + name, text, ["namespace", "pool", *extra], registry=registry)

        self.desired = series(Gauge, "desired_replicas", "spec.replicas of a pool.")
        self.replicas = series(Gauge, "replicas", "Members of a pool not being deleted.")
        self.ready = series(Gauge, "ready_replicas", "Ready members of a pool.")
        self.updated = series(
            Gauge, "updated_replicas", "Members of a pool at its current revision (a rotation's progress)."
        )
        self.min_available = series(
            Gauge,
            "min_available_replicas",
            "The floor a rotation keeps: desired replicas minus the strategy's maxUnavailable (resolved).",
        )
        self.target_desired = series(
            Gauge,
            "target_desired_replicas",
            "Members a spread target should have (skipped: at most what it holds; 0 without its provider).",
            "target",
        )
        self.created = series(Counter, "members_created_total", "Members a pool created.", "target")
        self.deleted = series(
            Counter,
            "members_deleted_total",
            "Members a pool deleted, by reason (ScaleDown, MaxAge, Outdated, TargetSkipped, PoolDeleted).",
            "reason",
        )

    def forget(self, namespace: str, pool: str, targets) -> None:
        for gauge in (self.desired, self.replicas, self.ready, self.updated, self.min_available):
            try:
                gauge.remove(namespace, pool)
            except KeyError:
                pass
        for target in targets:
            try:
                self.target_desired.remove(namespace, pool, target)
            except KeyError:
                pass
