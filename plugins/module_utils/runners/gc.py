# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Orphan garbage collection: which listed instances may be deleted, and deleting them.

Used by the ``proxy_gc`` module (hence by playbooks and the controller's GC loop). The rules,
each one a way an operator could otherwise delete something it must not:

* a provider whose ``list_by_tag`` fails is skipped for the whole sweep (never a partial view);
* an instance with an empty UID is never deleted (we cannot tell whose it is);
* an instance of another installation is never deleted (shared backends);
* with ``shards`` (count, owned), an instance whose UID's shard is not owned is kept: another
  controller replica collects it, with its own complete view of the live UIDs;
* an instance whose UID is live is kept;
* an instance younger than ``min_age`` is kept (its Proxy may not be visible yet); a missing
  ``created_at`` counts as very old, so an unreadable timestamp never shields an orphan forever.

A sweep must finish at any size: every list and every delete gets its own deadline (one shared
deadline left later orphans undeleted, silently), deletes run ``concurrency`` at a time across
all providers, and whatever could not be deleted is reported in ``remaining``.
"""

from __future__ import annotations

import dataclasses
import datetime

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import uid_shards
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import batch, inventory

DEFAULT_MIN_AGE_SECONDS = 600

KEEP_EMPTY_UID = "empty-uid"
KEEP_OTHER_INSTALLATION = "other-installation"
KEEP_OTHER_SHARD = "other-shard"
KEEP_LIVE = "live"
KEEP_YOUNG = "younger-than-min-age"
DELETE_ORPHAN = "orphan"


@dataclasses.dataclass(frozen=True)
class Decision:
    delete: bool
    reason: str


def decide(instance, live_uids, installation: str, min_age_seconds: float, now, shards=None) -> Decision:
    """The pure rule table: what to do with one listed instance (``shards``: (count, owned))."""
    if not instance.uid:
        return Decision(False, KEEP_EMPTY_UID)
    if instance.installation != installation:
        return Decision(False, KEEP_OTHER_INSTALLATION)
    if shards is not None and uid_shards.shard_of(instance.uid, shards[0]) not in shards[1]:
        return Decision(False, KEEP_OTHER_SHARD)
    if instance.uid in live_uids:
        return Decision(False, KEEP_LIVE)
    if instance.created_at is not None:
        age = (now - instance.created_at).total_seconds()
        if age < min_age_seconds:
            return Decision(False, KEEP_YOUNG)
    return Decision(True, DELETE_ORPHAN)


def sweep(
    providers,
    live_uids,
    installation: str,
    min_age_seconds: float,
    call_timeout: float,
    dry_run: bool = False,
    now=None,
    concurrency: int = batch.DEFAULT_CONCURRENCY,
    shards=None,
) -> dict:
    """Run one GC sweep over ``providers`` (name -> provider); returns a report, never raises
    for a provider failure (those are in ``errors``, the provider in ``skipped``, and an orphan
    whose delete failed in ``remaining``)."""
    now = now or datetime.datetime.now(datetime.UTC)
    live = frozenset(u for u in live_uids if u)
    report = {"deleted": [], "would_delete": [], "kept": [], "errors": [], "skipped": [], "remaining": []}
    orphans = []
    for name in sorted(providers):
        provider = providers[name]
        try:
            instances = provider.list_by_tag(Deadline(call_timeout))
        except Exception as exc:  # any failure means we cannot vouch for the list
            report["skipped"].append(name)
            report["errors"].append(_error_entry(name, "", exc))
            continue
        report["errors"].extend(inventory.unreadable_entries(name, provider))
        if not dry_run:
            _collect_leftovers(name, provider, call_timeout, report)
        for instance in instances:
            decision = decide(instance, live, installation, min_age_seconds, now, shards)
            entry = dict(instance.as_dict(name), reason=decision.reason)
            if not decision.delete:
                report["kept"].append(entry)
            elif dry_run:
                report["would_delete"].append(entry)
            else:
                orphans.append((provider, instance.id, entry))

    def delete(orphan):
        provider, provider_id, entry = orphan
        provider.delete(provider_id, Deadline(call_timeout))
        return ("deleted", entry, None)

    def failed(orphan, exc):
        _provider, provider_id, entry = orphan
        return ("remaining", entry, _error_entry(entry["provider"], provider_id, exc))

    for outcome, entry, error in batch.run(orphans, delete, failed, concurrency=concurrency):
        report[outcome].append(entry)
        if error is not None:
            report["errors"].append(error)
    return report


def _collect_leftovers(name: str, provider, call_timeout: float, report: dict) -> None:
    """What a killed operation left outside any instance goes too (a failure is an error entry,
    never the sweep's end). Fakes without the hook have nothing of the kind."""
    collect = getattr(provider, "collect_leftovers", None)
    if collect is None:
        return
    try:
        collect(Deadline(call_timeout))
    except Exception as exc:
        report["errors"].append(_error_entry(name, "", exc))


def _error_entry(provider_name: str, provider_id: str, exc: Exception) -> dict:
    return {
        "provider": provider_name,
        "id": provider_id,
        "error_class": errors.class_of(exc),
        "msg": str(exc),
    }
