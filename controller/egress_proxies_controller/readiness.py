"""What /readyz and /healthz answer, from the controller's parts as they come up.

Ready: the API server has not refused our credentials (401: never ready again, the process
exits), the cache synced and a good providers file in use (a standby for the Lease is ready at
once; with --shards, ready once this replica holds exactly its assigned shards). The details
name a credentials refusal, a providers-file problem and the providers gone from the file.
Healthy: the reconcile loop went round within --liveness-timeout (a standby has nothing to be
stuck).
"""

from __future__ import annotations

from .kube import credentials


class Readiness:
    def __init__(self, informer, *, leading: bool, liveness_timeout: float, sharding=None):
        self.informer = informer
        self.leading = leading  # True once this replica reconciles (at once without --leader-elect)
        self.liveness_timeout = liveness_timeout
        self.sharding = sharding
        self.config = None  # providers_config.ProvidersConfig, once built
        self.manager = None  # proxy.controller.ProxyController, once built
        self.refusal = None  # kube.credentials.Refusal: set once the API server refused our token

    def ready(self) -> tuple:
        """(ready, details) for /readyz."""
        if self.refusal is not None and self.refusal.is_set():
            return False, ["kubernetes: %s" % credentials.MESSAGE]
        config, manager, synced = self.config, self.manager, self.informer.synced.is_set()
        details = ["providers file: %s" % config.error] if config is not None and config.error else []
        if manager is not None and manager.missing:
            details += [
                "providers file: no provider %r (it made the instances of %d Proxies)" % item
                for item in sorted(manager.missing.items())
            ]
        if config is not None and config.in_use is None and self.leading and synced:
            return False, details  # no good providers file yet: nothing is reconciled
        if self.sharding is not None:  # ready once it holds exactly its assigned shards (maybe none)
            coordinator = self.sharding.coordinator
            return synced and coordinator is not None and coordinator.settled(), details
        return (not self.leading) or synced, details

    def healthy(self) -> bool:
        """For /healthz: a standby (no manager yet) is healthy; a stuck loop is not."""
        manager = self.manager
        return manager is None or manager.healthy(self.liveness_timeout)
