# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""How many members of a ``proxy_pool`` each spread target gets: the ProxyPool's split.

The one copy of the rule: the controller's ProxyPool planner (``pool_reconciler``) imports
``split`` from here (docs/architecture.md, import rule 11), so a ProxyPool and a playbook pool
of the same spread agree; standard library only, as that rule asks. Largest remainder
(Hamilton): every target gets the whole part of its exact share, the members left go to the
largest fractional parts, a tie to the target listed first. A target at its cap is fixed there
and the rest is split again over the others, so a skipped (degraded) target's share goes to the
others by their weights.
"""

from __future__ import annotations

from fractions import Fraction


def apportion(total: int, weights: list, caps: list) -> list:
    """Members per target for ``total`` members; ``caps[i]`` ``None`` is no limit. The sum is
    below ``total`` only when every target with a weight is at its cap."""
    counts = [0] * len(weights)
    remaining = [i for i, weight in enumerate(weights) if weight > 0 and caps[i] != 0]
    left = total
    while remaining and left > 0:
        weight_sum = sum(weights[i] for i in remaining)
        exact = {i: Fraction(left * weights[i], weight_sum) for i in remaining}
        share = {i: exact[i].numerator // exact[i].denominator for i in remaining}
        by_remainder = sorted(remaining, key=lambda i: (share[i] - exact[i], i))
        for i in by_remainder[: left - sum(share.values())]:
            share[i] += 1
        capped = [i for i in remaining if caps[i] is not None and share[i] >= caps[i]]
        if not capped:
            for i in remaining:
                counts[i] = share[i]
            return counts
        for i in capped:
            counts[i] = caps[i]
            left -= caps[i]
            remaining.remove(i)
    return counts


def split(total: int, targets: list, degraded_caps: dict) -> dict:
    """Target name -> members it should have; ``degraded_caps`` maps a skipped target to the
    most it may keep (what it holds: ``pool_members.holds``), under its own ``maximum``."""
    caps = []
    for target in targets:
        cap = target.maximum
        if target.name in degraded_caps:
            held = degraded_caps[target.name]
            cap = held if cap is None else min(cap, held)
        caps.append(cap)
    counts = apportion(total, [t.weight for t in targets], caps)
    return {t.name: n for t, n in zip(targets, counts, strict=True)}
