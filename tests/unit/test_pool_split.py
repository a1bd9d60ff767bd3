"""proxy_pool's split is the ProxyPool's: the same counts for the same weights and caps.

The module cannot import the controller, so the rule exists twice; this keeps them equal on
the documented examples and on a few thousand seeded random spreads (caps, zero weights and
skipped targets included)."""

from __future__ import annotations

import random

import pytest
from egress_proxies_controller import pool_spread

from ansible_collections.crawl.egress_proxies.plugins.module_utils import pool_split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.pool_params import Target


@pytest.mark.parametrize(
    "total,weights,caps,want",
    [
        (6, [2, 1], [None, None], [4, 2]),
        (8, [2, 1], [None, None], [5, 3]),
        (3, [2, 1], [None, None], [2, 1]),
        (10, [3, 3, 4], [None, None, 5], [3, 3, 4]),
        (20, [3, 3, 4], [None, None, 5], [8, 7, 5]),  # the capped target's rest split 3:3, tie to the first
        (5, [1, 1], [None, None], [3, 2]),
        (4, [0, 1], [None, None], [0, 4]),
        (6, [2, 1], [None, 0], [6, 0]),  # a skipped target holding nothing: its share moves
        (6, [2, 1], [1, 1], [1, 1]),  # every target capped: short
        (0, [2, 1], [None, None], [0, 0]),
    ],
)
def test_documented_splits(total, weights, caps, want):
    assert pool_split.apportion(total, weights, caps) == want
    assert pool_spread.apportion(total, weights, caps) == want


def test_the_module_and_the_controller_agree_on_random_spreads():
    rng = random.Random(19)
    for _round in range(3000):
        n = rng.randint(1, 5)
        weights = [rng.choice([0, 1, 1, 2, 3, 7]) for _target in range(n)]
        caps = [rng.choice([None, None, 0, 1, 2, 5]) for _target in range(n)]
        total = rng.randint(0, 40)
        assert pool_split.apportion(total, weights, caps) == pool_spread.apportion(total, weights, caps), (
            total,
            weights,
            caps,
        )


def test_split_applies_a_skipped_targets_cap_under_its_maximum():
    targets = [Target("a", "a", {}, 2, None), Target("b", "b", {}, 1, 3)]
    assert pool_split.split(6, targets, {}) == {"a": 4, "b": 2}
    assert pool_split.split(6, targets, {"b": 1}) == {"a": 5, "b": 1}
    assert pool_split.split(12, targets, {"b": 9}) == {"a": 9, "b": 3}  # its max still holds
