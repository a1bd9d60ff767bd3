"""What the documentation tests do with each block, for the closing note (tests/docs/conftest.py).

Computed from the Markdown and tests/docs/classify.py alone, not recorded while tests run, so the
note is the same in a serial session and under pytest-xdist (whose controller runs no test).
"""

from __future__ import annotations

import collections

from . import classify
from .markdown_blocks import Block, all_blocks


def outcome(block: Block) -> tuple:
    """``(outcome, why)``: outcome is "ran", "compared" (output or a diagram matched against what
    the part makes or has), "checked" or "not checked"."""
    if block.marker == "skip":
        return "not checked", block.reason
    what = classify.kind(block)
    run_by = classify.run_by(block)
    if run_by:
        return "ran", "by %s" % run_by
    compared_by = classify.compared_by(block)
    if compared_by:
        return "compared", "by %s" % compared_by
    if what == "text":
        return "not checked", "output or diagram (no language)"
    why = "%s%s" % (classify.CHECKED_BY[what], "; " + block.reason if block.reason else "")
    return "checked", "%s: %s (not run here)" % (what, why)


def summary() -> list[str]:
    """One line with the counts, then each reason with how many blocks it covers."""
    outcomes = [outcome(block) for block in all_blocks()]
    counts = collections.Counter(outcome[0] for outcome in outcomes)
    lines = [
        "documentation blocks: %d ran, %d compared, %d checked only, %d not checked"
        % (counts["ran"], counts["compared"], counts["checked"], counts["not checked"])
    ]
    for (what, why), count in sorted(collections.Counter(outcomes).items()):
        lines.append("  %-12s %3d  %s" % (what, count, why))
    return lines
