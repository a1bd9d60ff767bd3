"""The orphan GC loop: runs ``proxy_gc`` through ansible-runner with the live Proxy UIDs.

The live UIDs come from the informer's cache, and only once it has synced: a sweep from a
partial view would collect instances whose Proxy simply was not listed yet. The module applies
every rule (min age, empty UID, another installation, a provider whose list fails is skipped)
and collects secondary resources the providers mark. ``dry_run`` only logs what would go.

A controller watching one namespace (``--namespace``) sees the live UIDs of that namespace only,
while ``proxy_gc`` lists the whole installation: two such controllers sharing an installation
would collect each other's instances. So a scoped controller sweeps only when told the
installation is its own (``--gc-own-installation``); otherwise it skips every sweep and says so.

With ``--shards``, each replica sweeps with the complete set of live UIDs (every Proxy is
cached, whatever its shard) but collects only the instances whose UID is in a shard it holds
(proxy_gc's ``uid_shards``); those shards are not given up while its sweep runs.

A sweep waits for the configuration as it waits for the informer: until a providers file has
been validated (``executor.providers_file``) there is nothing to sweep with, and a run would
only fail (``RunFailed``); the first round comes 5 s after start, often before validation ends.
"""

from __future__ import annotations

import logging

from .periodic import PeriodicLoop

log = logging.getLogger("egress_proxies_controller.gc")


class OrphanGC(PeriodicLoop):
    name = "orphan-gc"

    def __init__(
        self,
        executor,
        informer,
        metrics,
        *,
        interval: float,
        jitter: float,
        min_age: float,
        dry_run: bool,
        namespace: str | None = None,
        own_installation: bool = False,
        shards=None,
    ):
        super().__init__(interval, jitter, initial_delay=min(interval, 5.0))
        self.executor, self.informer, self.metrics = executor, informer, metrics
        self.min_age, self.dry_run = min_age, dry_run
        self.last_report = None
        self.shards = shards  # with --shards: a ShardClaims; only the held shards' orphans go
        self.refused = bool(namespace) and not own_installation
        if self.refused and interval > 0:
            log.warning(
                "gc: disabled: this controller watches namespace %s only, and another controller may "
                "share the installation; pass --gc-own-installation if the providers file's "
                "installation is used by this namespace alone",
                namespace,
            )

    def round(self) -> None:
        if self.refused:
            return
        if not self.informer.synced.is_set():
            log.info("gc: informer not synced yet; skipping this sweep")
            return
        if not self.executor.providers_file:
            log.info("gc: no valid providers file yet; skipping this sweep")
            return
        live = self.informer.uids()
        if self.stop_event.is_set():
            return  # shutting down: no new sweep
        if self.shards is None:
            report = self.executor.gc(live, self.min_age, self.dry_run)
        else:
            with self.shards.claim() as owned:  # held (not given up) until the sweep ends
                if not owned:
                    return
                uid_shards = {"count": self.shards.count, "owned": sorted(owned)}
                report = self.executor.gc(live, self.min_age, self.dry_run, uid_shards)
        self.last_report = report
        if not report:
            log.warning("gc: the sweep produced no report")
            return
        for entry in report.get("deleted") or []:
            log.info(
                "gc: deleted %s on %s (uid %s, %s)",
                entry["id"],
                entry["provider"],
                entry["uid"],
                entry["reason"],
            )
            self.metrics.gc_deleted.labels(entry["provider"]).inc()
        for entry in report.get("would_delete") or []:
            log.info(
                "gc (dry run): would delete %s on %s (uid %s)", entry["id"], entry["provider"], entry["uid"]
            )
            self.metrics.gc_would_delete.labels(entry["provider"]).inc()
        for entry in report.get("kept") or []:
            self.metrics.gc_kept.labels(entry["provider"], entry["reason"]).inc()
        for provider in report.get("skipped_providers") or []:
            self.metrics.gc_skipped.labels(provider).inc()
        for error in report.get("errors") or []:
            log.warning("gc: %s %s: %s", error["provider"], error.get("id") or "list", error["msg"])
