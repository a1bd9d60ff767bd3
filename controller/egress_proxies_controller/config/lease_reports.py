"""Providers-file problems told to users: a metric always, and Events on the controller's Lease.

With --leader-elect the Lease is the controller's one object every replica shares, so a
providers file that became invalid (or valid again), and providers gone from it that made
instances, are each one Event there, once per change; without a Lease the log line, the
metric and /readyz say it.
"""

from __future__ import annotations

from .. import api

LEASE_API = "coordination.k8s.io/v1"


class LeaseReports:
    def __init__(
        self, kube, metrics, *, leader_elect: bool, lease_namespace: str, lease_name: str, path: str
    ):
        self.kube, self.metrics = kube, metrics
        self.leader_elect = leader_elect
        self.lease = {"metadata": {"name": lease_name, "namespace": lease_namespace}}
        self.path = path
        self.config = None  # providers_config.ProvidersConfig, once built

    def config_problem(self, problem: str) -> None:
        """Once per new providers-file problem (and once when fixed): metric and one Event."""
        self.metrics.config_error.set(1 if problem else 0)
        if not self.leader_elect:
            return
        if problem:
            kept = self.config is not None and self.config.in_use
            message = "%s; %s" % (
                problem,
                "the last good version stays in use" if kept else "no provider calls until it is fixed",
            )
            self._event("Warning", "ProvidersFileInvalid", message)
        else:
            self._event(
                "Normal", "ProvidersFileValid", "providers file %s is valid again and in use" % self.path
            )

    def missing(self, missing: dict) -> None:
        """Once per change: one Event naming the providers gone from the file."""
        if not (self.leader_elect and missing):
            return
        message = (
            "providers file %s has no provider %s, which made the instances of %s; those Proxies "
            "are left as they are until it is back"
            % (
                self.path,
                ", ".join(repr(p) for p in sorted(missing)),
                ", ".join("%d Proxies" % missing[p] for p in sorted(missing)),
            )
        )
        self._event("Warning", "ProvidersMissing", message)

    def _event(self, event_type: str, reason: str, message: str) -> None:
        self.kube.event(self.lease, event_type, reason, message, api.EVENT_COMPONENT, "Lease", LEASE_API)
