# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The runner behind ``proxy_gc``: gather the live UIDs, then sweep with the rules of runners/gc.py.

Refuses to run without an explicit source of live UIDs (a list, possibly empty, or a cluster),
because a sweep that silently assumed "no live Proxies" would collect everything.
"""

from __future__ import annotations

import re

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import UsageError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import param_checks, uid_shards
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import gc, instance_diff, live_uids

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600}


def parse_duration(text) -> float:
    """``"600"``, ``"90s"``, ``"10m"``, ``"1h"`` -> seconds."""
    match = _DURATION.match(str(text))
    if not match:
        raise UsageError("min_age: %r is not a duration such as 600, 90s, 10m or 1h" % (text,))
    return float(match.group(1)) * _UNIT[match.group(2)]


def _check_live_uids(uids) -> None:
    """An empty uid protects nothing (no instance has it) while looking like one live Proxy."""
    problems = []
    for index, uid in enumerate(uids if isinstance(uids, list) else []):
        field = "live_uids[%d]" % index
        problem = param_checks.text(uid, field) if uid != "" else "%s: must not be empty" % field
        if problem:
            problems.append(problem)
    if problems:
        raise UsageError("; ".join(problems[:10]))


def run(pm) -> dict:
    params = pm.params
    min_age = parse_duration(params["min_age"])
    timeout = float(params["timeout"])
    only = pm.selected_provider()
    shards = uid_shards.parse(params.get("uid_shards"))  # checked before anything is listed
    if params.get("live_uids") is not None:
        uids = params["live_uids"]
        _check_live_uids(pm.raw_params.get("live_uids", uids))
        source = "live_uids"
    elif params.get("kubeconfig") or params.get("context") or params.get("in_cluster"):
        uids = live_uids.from_cluster(params.get("kubeconfig"), params.get("context"), timeout)
        source = "cluster"
    else:
        raise UsageError(
            "live_uids: required (possibly empty) unless kubeconfig, context or in_cluster names a "
            "cluster to read the live Proxy UIDs from"
        )
    report = gc.sweep(
        pm.providers(only),
        uids,
        pm.config.installation,
        min_age,
        timeout,
        dry_run=pm.check_mode,
        concurrency=int(params["concurrency"]),
        shards=shards,
    )
    # ``skipped`` is a result key every ansible-core reads as "the task was skipped" (2.21 turns a
    # list there into a bool): the providers skipped for this sweep are returned under their own name.
    report["skipped_providers"] = report.pop("skipped")
    for error in report["errors"]:
        pm.module.warn("gc: %s %s: %s" % (error["provider"], error["id"] or "list", error["msg"]))
    report.update(
        changed=bool(report["deleted"]) or bool(report["would_delete"]),
        incomplete=bool(report["remaining"]),
        installation=pm.config.installation,
        live_uid_count=len(uids),
        live_uid_source=source,
        min_age_seconds=min_age,
        uid_shards={"count": shards[0], "owned": sorted(shards[1])} if shards else None,
    )
    if pm.diff_mode:
        gone = report["would_delete"] if pm.check_mode else report["deleted"]
        report["diff"] = [instance_diff.disappeared(instance_diff.listed_side(e)) for e in gone]
    if report["remaining"]:
        failures = [e for e in report["errors"] if e["id"]]
        report["failed_msg"] = "gc incomplete: %d of %d orphans could not be deleted (%s)" % (
            len(report["remaining"]),
            len(report["remaining"]) + len(report["deleted"]),
            "; ".join(e["msg"] for e in failures[:3]),
        )
        report["error_class"] = failures[0]["error_class"] if failures else "transient"
    return report
