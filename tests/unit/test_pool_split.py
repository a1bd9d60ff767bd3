"""The split of a pool's members over its spread targets (``pool_split``): one rule, used by
``proxy_pool`` and by the controller's ProxyPool planner (pool_spread imports it), so a playbook
pool and a ProxyPool of the same spread agree by construction.

Largest remainder (Hamilton) with caps: the documented examples, a growing pool that never moves
a member, and a skipped target's cap under its own maximum."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pool_split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.pool_target import Target


@pytest.mark.parametrize(
    "total,weights,caps,want",
    [
        (6, [2, 1], [None, None], [4, 2]),
        (8, [2, 1], [None, None], [5, 3]),  # 5.33 / 2.67: the larger remainder gets the 8th
        (3, [2, 1], [None, None], [2, 1]),
        (7, [1, 1, 1], [None, None, None], [3, 2, 2]),  # a tie goes to the target listed first
        (10, [3, 3, 4], [None, None, 5], [3, 3, 4]),
        (20, [3, 3, 4], [None, None, 5], [8, 7, 5]),  # the capped target's rest split 3:3, tie to the first
        (5, [1, 1], [None, None], [3, 2]),
        (10, [3, 2], [2, None], [2, 8]),  # capped: the rest goes to the other target
        (10, [1, 1, 1], [None, 0, None], [5, 0, 5]),  # a skipped target's share goes to the others
        (4, [0, 1], [None, None], [0, 4]),  # weight 0 gets nothing
        (6, [2, 1], [None, 0], [6, 0]),  # a skipped target holding nothing: its share moves
        (6, [2, 1], [1, 1], [1, 1]),  # every target capped: short
        (10, [1, 1], [3, 4], [3, 4]),
        (0, [2, 1], [None, None], [0, 0]),
        (100, [6, 4], [None, None], [60, 40]),
    ],
)
def test_documented_splits(total, weights, caps, want):
    assert pool_split.apportion(total, weights, caps) == want
    assert sum(want) <= total


def test_split_follows_the_count_without_jumps():
    """As the count grows one by one, no target ever loses a member (2:1 split)."""
    previous = [0, 0]
    for total in range(0, 60):
        now = pool_split.apportion(total, [2, 1], [None, None])
        assert sum(now) == total
        assert now[0] >= previous[0] and now[1] >= previous[1], (total, previous, now)
        previous = now


def test_split_applies_a_skipped_targets_cap_under_its_maximum():
    targets = [Target("a", "a", {}, 2, None), Target("b", "b", {}, 1, 3)]
    assert pool_split.split(6, targets, {}) == {"a": 4, "b": 2}
    assert pool_split.split(6, targets, {"b": 1}) == {"a": 5, "b": 1}
    assert pool_split.split(12, targets, {"b": 9}) == {"a": 9, "b": 3}  # its max still holds


def test_split_applies_maxima_and_degraded_caps():
    """A ProxyPool's spread (moved from the controller's pool_spread.desired tests)."""
    targets = (Target("a", "p1", {}, 2, None), Target("b", "p2", {}, 1, 1))
    assert pool_split.split(6, targets, {}) == {"a": 5, "b": 1}
    assert pool_split.split(6, targets, {"a": 2}) == {"a": 2, "b": 1}
    assert pool_split.split(6, targets, {"b": 0}) == {"a": 6, "b": 0}
