"""The provider health monitor: ``proxy_check`` every interval, one ProviderHealth per provider.

One round is one runner run of ``proxy_check`` under one timeout; the module reports a provider
whose check hangs as ``Timeout`` without delaying the others. ProviderHealth objects follow the
providers file: created for a new provider, removed when it leaves the file.
"""

from __future__ import annotations

import logging

from .. import api
from ..kube import conditions
from ..kube.client import ApiException
from ..runs.executor import RunFailed
from .periodic import PeriodicLoop

log = logging.getLogger("egress_proxies_controller.loops.provider_checks")
MANAGED_LABEL = "crawl.example.com/managed-by"
MANAGED_VALUE = "egress-proxies-controller"


def health_status(entry: dict, previous: dict, checked_at: str) -> dict:
    """The ProviderHealth status for one provider entry of proxy_check's result."""
    targets = [
        {
            "name": t.get("target", ""),
            "address": t.get("address", ""),
            "ready": bool(t.get("ready")),
            "reason": t.get("reason", ""),
            "message": t.get("message", ""),
            "details": t.get("details") or {},
            "lastChecked": checked_at,
        }
        for t in entry.get("targets") or []
    ]
    if not entry.get("supported"):
        ready, reason, message = False, "Unsupported", "this provider type has no health check"
    elif entry.get("ready"):
        ready, reason, message = True, "AllTargetsReady", "%d target(s) ready" % len(targets)
    else:
        failing = [t for t in targets if not t["ready"]]
        ready = False
        reason = failing[0]["reason"] if failing else "Unknown"
        message = "; ".join("%s: %s" % (t["name"], t["message"]) for t in failing)[:1024]
    conds = conditions.set_condition(
        (previous or {}).get("conditions"), api.COND_READY, ready, reason or "Unknown", message, 0, checked_at
    )
    return {"type": entry.get("type", ""), "lastChecked": checked_at, "conditions": conds, "targets": targets}


class ProviderHealthMonitor(PeriodicLoop):
    name = "provider-health"

    def __init__(self, executor, kube, metrics, *, interval: float, round_timeout: float):
        super().__init__(interval, 0.1, initial_delay=1.0)
        self.executor, self.kube, self.metrics = executor, kube, metrics
        self.round_timeout = round_timeout

    def round(self) -> None:
        if not self._providers_file_valid():
            return
        checked_at = conditions.now_rfc3339()
        try:
            result = self.executor.check(self.round_timeout)
        except RunFailed as exc:
            log.warning("provider checks: %s; trying again in %gs", exc, self.interval)
            return  # one line for one problem (no second "returned nothing" about it)
        entries = result.get("providers")
        if entries is None:
            log.warning("provider checks returned nothing: %s", result.get("msg", "no result"))
            return
        seen = set()
        for entry in entries:
            name = entry["name"]
            seen.add(name)
            self._write(name, entry, checked_at)
            self.metrics.provider_ready.labels(name).set(1 if entry.get("ready") else 0)
            for target in entry.get("targets") or []:
                self.metrics.provider_target_ready.labels(name, target.get("target", "")).set(
                    1 if target.get("ready") else 0
                )
        self._remove_stale(seen)

    def _providers_file_valid(self) -> bool:
        """Wait (at most an interval) for the first valid providers file: at start the file is
        still being validated, and a round without it would only say so. An invalid file is
        reported where it is read (/readyz, the Lease's Event, a metric), not here again."""
        waited = 0.0
        while not self.executor.providers_file:
            if waited >= self.interval or self.stop_event.wait(0.2):
                log.debug("provider checks: no valid providers file yet; skipping this round")
                return False
            waited += 0.2
        return True

    def _write(self, name: str, entry: dict, checked_at: str) -> None:
        current = self.kube.get_cluster_object(api.HEALTH_PLURAL, name)
        if current is None:
            body = {
                "apiVersion": "%s/%s" % (api.GROUP, api.VERSION),
                "kind": api.HEALTH_KIND,
                "metadata": {"name": name, "labels": {MANAGED_LABEL: MANAGED_VALUE}},
                "spec": {},
            }
            try:
                current = self.kube.create_cluster_object(api.HEALTH_PLURAL, body)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                current = self.kube.get_cluster_object(api.HEALTH_PLURAL, name)
        current = dict(current, status=health_status(entry, current.get("status") or {}, checked_at))
        self.kube.replace_cluster_object_status(api.HEALTH_PLURAL, current)

    def _remove_stale(self, seen: set) -> None:
        for item in self.kube.list_cluster_objects(
            api.HEALTH_PLURAL, "%s=%s" % (MANAGED_LABEL, MANAGED_VALUE)
        ):
            name = item["metadata"]["name"]
            if name not in seen:
                log.info("provider %s left the providers file: removing its ProviderHealth", name)
                self.kube.delete_cluster_object(api.HEALTH_PLURAL, name)
