"""What a skipped (degraded) spread target may keep, the cap the ProxyPool's split applies.

The split itself is ``pool_split.split`` (module_utils), the one rule proxy_pool uses too: largest
remainder (Hamilton), a target's ``max`` (or a cap from a degraded target) honoured by fixing
that target at its cap and splitting the rest again over the others, so a skipped target's share
goes to the others, in proportion to their weights.

A skipped target is capped at what it holds (``skip_caps``): every current member that has not
failed, Ready or still on its way (Provisioning). Counting only the Ready ones would cap a target
whose members that fit are still starting at 0, and the planner would delete them. proxy_pool
holds the same members by its own member model (``pool_members.holds``, over listed instances
instead of Proxies); ``tests/unit/test_pool_skip_rule.py`` checks that both keep the same members.
"""

from __future__ import annotations


def holds(members, target: str, revision: str) -> int:
    """Members ``target`` holds while skipped: current (``revision``), not being deleted and not
    failed (no PermanentError or QuotaExceeded latched), whether Ready yet or not."""
    return sum(
        1
        for m in members
        if m.target == target and m.revision == revision and not m.deleting and not m.failure
    )


def skip_caps(degraded, providers: dict, configured: set, members, revisions: dict) -> dict:
    """Skipped target -> the most it may keep: 0 when its provider is not in the providers file
    (nothing can run there), else what it ``holds``; so a skip never shrinks what fits."""
    return {
        name: holds(members, name, revisions[name]) if providers[name] in configured else 0
        for name in degraded
    }
