"""How many members each spread target gets: a weighted split of the replicas.

Largest-remainder apportionment (Hamilton's method): every target gets the floor of its exact
share, and the members left go to the largest fractional parts (ties: the target listed first),
so the split is as close to the weights as whole members allow and the same input always gives
the same answer. A target's ``max`` (or a cap from a degraded target) is honoured by fixing that
target at its cap and splitting the rest again over the others: a skipped target's share goes to
the others, in proportion to their weights.

A skipped target is capped at what it holds (``skip_caps``): every current member that has not
failed, Ready or still on its way (Provisioning). Counting only the Ready ones would cap a target
whose members that fit are still starting at 0, and the planner would delete them. proxy_pool
holds the same members (its ``pool_members.holds``: the controller imports no module_utils, so
``tests/unit/test_pool_skip_rule.py`` keeps the two equal).
"""

from __future__ import annotations

from fractions import Fraction


def apportion(total: int, weights: list, caps: list) -> list:
    """Members per target for ``total`` replicas; ``caps[i]`` None means no limit. The sum is
    less than ``total`` only when every target with weight is at its cap."""
    counts = [0] * len(weights)
    open_ = [i for i, w in enumerate(weights) if w > 0 and (caps[i] is None or caps[i] > 0)]
    left = total
    while open_ and left > 0:
        weight_sum = sum(weights[i] for i in open_)
        exact = {i: Fraction(left * weights[i], weight_sum) for i in open_}
        share = {i: int(exact[i]) for i in open_}
        rest = left - sum(share.values())
        for i in sorted(open_, key=lambda i: (-(exact[i] - share[i]), i))[:rest]:
            share[i] += 1
        over = [i for i in open_ if caps[i] is not None and share[i] >= caps[i]]
        if not over:
            for i in open_:
                counts[i] = share[i]
            return counts
        for i in over:  # fix the capped targets and split the rest again over the others
            counts[i] = caps[i]
            left -= caps[i]
            open_.remove(i)
    return counts


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


def desired(replicas: int, targets, degraded_caps: dict) -> dict:
    """Target name -> members it should have. ``degraded_caps`` maps a skipped target to the
    most it may keep (``skip_caps``)."""
    caps = []
    for target in targets:
        cap = target.max
        if target.name in degraded_caps:
            cap = degraded_caps[target.name] if cap is None else min(cap, degraded_caps[target.name])
        caps.append(cap)
    counts = apportion(replicas, [t.weight for t in targets], caps)
    return {t.name: n for t, n in zip(targets, counts, strict=True)}
