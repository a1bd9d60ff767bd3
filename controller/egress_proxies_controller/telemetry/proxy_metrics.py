"""Proxies by provider and Ready condition, counted from the informer's cache at each scrape.

The metrics server calls ``collect`` on every scrape; it reads a snapshot of the cached Proxies
(``objects``) and reports, per provider (the one that made the instance, else ``spec.provider``):
how many Proxies have which Ready status and reason, and how long the longest not-Ready one has
been so. Nothing is kept between scrapes, so a Proxy that is gone is never reported. Every
replica caches every Proxy it may serve, so dashboards take ``max`` over replicas, not ``sum``.
"""

from __future__ import annotations

import datetime
import time

from prometheus_client.core import GaugeMetricFamily


def _ready_condition(obj: dict) -> dict:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond
    return {}


def _epoch(stamp: str) -> float | None:
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        return None


class ProxyConditions:
    """A prometheus_client collector over ``objects()`` (a list of Proxy objects)."""

    def __init__(self, objects, clock=time.time):
        self.objects, self.clock = objects, clock

    def describe(self):
        return []  # no series at registration: collect reads the cache only when scraped

    def collect(self):
        counts, oldest = {}, {}
        now = self.clock()
        for obj in self.objects():
            status, spec = obj.get("status") or {}, obj.get("spec") or {}
            provider = status.get("provider") or spec.get("provider", "")
            cond = _ready_condition(obj)
            ready, reason = cond.get("status", "Unknown"), cond.get("reason", "")
            counts[provider, ready, reason] = counts.get((provider, ready, reason), 0) + 1
            oldest.setdefault(provider, 0.0)
            since = _epoch(cond.get("lastTransitionTime", "")) if ready != "True" else None
            if since is not None:
                oldest[provider] = max(oldest[provider], now - since)
        family = GaugeMetricFamily(
            "egress_proxies_proxies",
            "Proxies by provider and their Ready condition's status (True, False, Unknown when it has "
            "none yet) and reason.",
            labels=["provider", "ready", "reason"],
        )
        for labels, count in sorted(counts.items()):
            family.add_metric(list(labels), count)
        yield family
        longest = GaugeMetricFamily(
            "egress_proxies_proxies_not_ready_seconds",
            "Seconds since the longest not-Ready Proxy of a provider turned not Ready (0: all Ready).",
            labels=["provider"],
        )
        for provider, seconds in sorted(oldest.items()):
            longest.add_metric([provider], max(0.0, seconds))
        yield longest
