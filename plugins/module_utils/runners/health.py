# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Provider health checks: the runner behind ``proxy_check``.

Every provider's Checker runs at once, under one round timeout. A check that hangs is reported
as a ``Timeout`` target for that provider without delaying the others (its thread is a daemon
and is abandoned). A provider without a Checker is reported unsupported, not failed.
"""

from __future__ import annotations

import threading

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline


def check_all(providers: dict, timeout: float) -> list:
    """One entry per provider, sorted by name: name, type, supported, ready, targets."""
    round_deadline = Deadline(timeout)
    outcomes, threads = {}, {}

    def one(name, provider):
        try:
            outcomes[name] = [t.as_dict() for t in provider.check(round_deadline)]
        except Exception as exc:  # a Checker must not raise; if it does, report it, don't crash
            outcomes[name] = [
                contract.TargetStatus(
                    name, "", False, contract.REASON_API_ERROR, "check raised: %s" % exc
                ).as_dict()
            ]

    for name, provider in providers.items():
        if provider.checker is None:
            continue
        thread = threading.Thread(target=one, args=(name, provider), name="check-%s" % name, daemon=True)
        threads[name] = thread
        thread.start()
    for thread in threads.values():
        thread.join(round_deadline.remaining())
    round_deadline.cancel()

    report = []
    for name in sorted(providers):
        provider = providers[name]
        entry = {"name": name, "type": provider.type_name, "supported": provider.checker is not None}
        if not entry["supported"]:
            entry.update(ready=None, targets=[])
        else:
            targets = outcomes.get(name)
            if targets is None:
                targets = [
                    contract.TargetStatus(
                        name, "", False, contract.REASON_TIMEOUT, "check did not finish within %gs" % timeout
                    ).as_dict()
                ]
            entry.update(ready=all(t["ready"] for t in targets), targets=targets)
        report.append(entry)
    return report


def run(pm) -> dict:
    only = pm.selected_provider()
    report = check_all(pm.providers(only), float(pm.params["timeout"]))
    unready = [p["name"] for p in report if p["ready"] is False]
    result = {"changed": False, "providers": report, "ready": not unready}
    if unready and pm.params.get("fail_on_unready"):
        result["failed_msg"] = "providers not ready: %s" % ", ".join(unready)
        result["error_class"] = "transient"
    return result
