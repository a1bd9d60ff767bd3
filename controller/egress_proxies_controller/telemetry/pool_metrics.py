"""Prometheus series per ProxyPool, registered in the controller's registry (telemetry/metrics.py)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge


class PoolMetrics:
    def __init__(self, registry):
        labels = ["namespace", "pool"]
        self.desired = Gauge(
            "egress_proxies_pool_desired_replicas", "spec.replicas of a pool.", labels, registry=registry
        )
        self.replicas = Gauge(
            "egress_proxies_pool_replicas", "Members of a pool not being deleted.", labels, registry=registry
        )
        self.ready = Gauge(
            "egress_proxies_pool_ready_replicas", "Ready members of a pool.", labels, registry=registry
        )
        self.updated = Gauge(
            "egress_proxies_pool_updated_replicas",
            "Members of a pool at its current revision (a rotation's progress).",
            labels,
            registry=registry,
        )
        self.min_available = Gauge(
            "egress_proxies_pool_min_available_replicas",
            "The floor a rotation keeps: desired replicas minus the strategy's maxUnavailable (resolved).",
            labels,
            registry=registry,
        )
        self.target_desired = Gauge(
            "egress_proxies_pool_target_desired_replicas",
            "Members a spread target should have (skipped: at most what it holds; 0 without its provider).",
            [*labels, "target"],
            registry=registry,
        )
        self.created = Counter(
            "egress_proxies_pool_members_created_total",
            "Members a pool created.",
            [*labels, "target"],
            registry=registry,
        )
        self.deleted = Counter(
            "egress_proxies_pool_members_deleted_total",
            "Members a pool deleted, by reason (ScaleDown, MaxAge, Outdated, TargetSkipped, PoolDeleted).",
            [*labels, "reason"],
            registry=registry,
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
