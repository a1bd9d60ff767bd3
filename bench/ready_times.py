"""Creation-to-Ready figures of a burst, and issue 38's goal against the floor (pure).

A burst's total time hides when each Proxy became usable: a controller that makes every Proxy
Ready in one lump at the end has the same total as one that streams them out, but its users wait
far longer. So each Proxy's wait is measured from the moment its create call returned (client
side) to the first Ready=True the bench saw through its watch, and summarised as percentiles and
as how many were Ready when the floor (no controller) had finished.
"""

from __future__ import annotations

import math

#: issue 38's goal: total at most 1.2x the floor's, p50 at most 1.3x the floor's p50
TOTAL_RATIO = 1.2
P50_RATIO = 1.3
QUANTILES = (50, 90, 99)


def waits(created: dict, ready_at: dict) -> list:
    """Seconds from each Proxy's create to its Ready, for the Proxies that became Ready; the
    clock is the same monotonic one for both (names missing in ``created`` are not ours)."""
    return sorted(ready_at[name] - created[name] for name in ready_at if name in created)


def percentile(values: list, q: float, population: int) -> float | None:
    """The nearest-rank ``q``-th percentile over ``population`` Proxies, of which ``values``
    became Ready: the rest count as never Ready, so a percentile they reach is None (not known
    within the budget) rather than a figure that leaves them out."""
    if population <= 0:
        return None
    rank = max(1, math.ceil(q / 100.0 * population))
    ordered = sorted(values)
    return ordered[rank - 1] if rank <= len(ordered) else None


def ready_by(offsets: list, at: float) -> int:
    """How many Proxies were Ready ``at`` seconds after their burst began (``offsets``: each
    Ready's seconds after the burst began)."""
    return sum(1 for offset in offsets if offset <= at)


def timeline(offsets: list, step: float, until: float) -> list:
    """How many were Ready at each ``step`` seconds up to ``until`` (the shape of a burst: a
    late start and a steep rise, or Ready from the first seconds on)."""
    marks, at = [], step
    while at <= until + step:
        marks.append((at, ready_by(offsets, at)))
        at += step
    return marks


def figures(started: float, created: dict, ready_at: dict, population: int) -> dict:
    """The row's figures: ``total`` (burst start to the last Ready; None when not all were
    Ready), ``offsets``, ``last_created`` (when the last create returned) and
    ``p50``/``p90``/``p99`` of the creation-to-Ready waits."""
    offsets = sorted(t - started for t in ready_at.values())
    latency = waits(created, ready_at)
    out = {
        "offsets": offsets,
        "total": offsets[-1] if offsets and len(offsets) >= population else None,
        "last_created": max(created.values()) - started if created else None,
    }
    for q in QUANTILES:
        out["p%d" % q] = percentile(latency, q, population)
    return out


def ratio(value: float | None, floor: float | None) -> float | None:
    if value is None or not floor:
        return None
    return value / floor


def goal(row: dict, floor: dict) -> tuple:
    """(met, reason) of a mode's row against the floor's row of the same run and count: total at
    most ``TOTAL_RATIO`` times the floor's, p50 at most ``P50_RATIO`` times the floor's p50. A
    row or floor that did not finish cannot meet it."""
    total, p50 = ratio(row.get("total"), floor.get("total")), ratio(row.get("p50"), floor.get("p50"))
    if total is None or p50 is None:
        return False, "not all Ready within the budget (this mode or the floor)"
    reasons = [
        "total %.2fx %s %.1fx" % (total, "<=" if total <= TOTAL_RATIO else ">", TOTAL_RATIO),
        "p50 %.2fx %s %.1fx" % (p50, "<=" if p50 <= P50_RATIO else ">", P50_RATIO),
    ]
    return total <= TOTAL_RATIO and p50 <= P50_RATIO, ", ".join(reasons)


def seconds_text(value: float | None) -> str:
    return "-" if value is None else "%.1f" % value


def ratio_text(value: float | None) -> str:
    return "-" if value is None else "%.2fx" % value
