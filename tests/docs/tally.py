"""What the documentation tests did with each block, for the closing note (tests/docs/conftest.py)."""

from __future__ import annotations

import collections

#: block location -> (outcome, why): outcome is "ran", "checked" or "not checked"
OUTCOMES: dict = {}


def record(where: str, outcome: str, why: str) -> None:
    OUTCOMES[where] = (outcome, why)


def summary() -> list[str]:
    """One line per outcome with its count, then the reasons and how many blocks each covers."""
    by_outcome = collections.Counter(outcome for outcome, _ in OUTCOMES.values())
    lines = [
        "documentation blocks: %d ran, %d checked only, %d not checked"
        % (by_outcome["ran"], by_outcome["checked"], by_outcome["not checked"])
    ]
    reasons = collections.Counter(OUTCOMES.values())
    for (outcome, why), count in sorted(reasons.items()):
        lines.append("  %-12s %3d  %s" % (outcome, count, why))
    return lines
