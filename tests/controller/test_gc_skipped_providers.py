"""The GC loop counts the providers a sweep skipped from proxy_gc's ``skipped_providers`` (issue
39): ``skipped`` is ansible's own result key, which ansible-core 2.21 turns into a bool."""

from __future__ import annotations

import threading

from egress_proxies_controller.loops.orphan_gc import OrphanGC
from egress_proxies_controller.telemetry.metrics import Metrics


class _Informer:
    def __init__(self):
        self.synced = threading.Event()
        self.synced.set()

    def uids(self) -> set:
        return set()


class _Executor:
    providers_file = "providers.yaml"

    def gc(self, live, min_age, dry_run, uid_shards=None):
        return {"deleted": [], "would_delete": [], "kept": [], "errors": [], "skipped_providers": ["broken"]}


def test_a_skipped_provider_is_counted():
    metrics = Metrics()
    OrphanGC(_Executor(), _Informer(), metrics, interval=1, jitter=0, min_age=0, dry_run=True).round()
    sample = metrics.registry.get_sample_value("egress_proxies_gc_skipped_total", {"provider": "broken"})
    assert sample == 1
