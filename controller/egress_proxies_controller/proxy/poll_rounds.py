"""Running polls in rounds: every Running Proxy of a provider comes due at the same instants.

A provider's Running Proxies are polled with one list per run (executor ``list_threshold``), so
the cost of polling them is a runner start-up and one list per run, whatever the run carries.
Left to themselves, 10,000 polls of 60 s come due at about 167 a second, and every run answers
only the few due when it started. Aligned on a grid of the poll interval, they come due together
and one run (one list) answers the whole round: about one run per provider per interval.

The grid is wall-clock time, offset per provider by a stable hash of its name, so replicas and
restarts agree on it and two providers do not start their rounds in the same second. A Proxy
joins the first round at least half an interval away: its next poll is between 0.5 and 1.5
intervals later (never later than twice the interval, as the issue asks), then one interval.
"""

from __future__ import annotations

import hashlib
import time


def offset(provider: str, interval: float) -> float:
    """The provider's place on the grid, in [0, interval)."""
    digest = hashlib.sha256(provider.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 * interval


def delay(provider: str, interval: float, now: float | None = None) -> float:
    """Seconds from ``now`` (wall clock) until the provider's first round at least
    ``interval / 2`` away."""
    if interval <= 0:
        return 0.0
    now = time.time() if now is None else now
    earliest = now + interval / 2.0
    base = offset(provider, interval)
    rounds = -(-(earliest - base) // interval)  # ceiling division
    return base + rounds * interval - now
