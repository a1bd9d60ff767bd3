"""The shard of a Proxy and the rendezvous assignment of shards to replicas (pure functions)."""

from __future__ import annotations

import hashlib
import itertools
import uuid

import pytest
from egress_proxies_controller.sharding import assignment as shards

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import uid_shards

MEMBERS = ["ctl-a_1", "ctl-b_2", "ctl-c_3"]


def test_shard_of_is_the_documented_sha256_function():
    uid = "3f1c8a52-0000-4000-8000-000000000001"
    expected = int(hashlib.sha256(uid.encode()).hexdigest()[:16], 16) % 7
    assert uid_shards.shard_of(uid, 7) == expected  # the one function, also shards.shard_of
    assert uid_shards.shard_of(uid, 1) == 0


def test_shards_spread_uids():
    counts = [0, 0, 0]
    for i in range(3000):
        counts[shards.shard_of(str(uuid.UUID(int=i)), 3)] += 1
    assert min(counts) > 850, counts  # 1000 each on average


def test_assignment_is_the_same_whatever_the_order_members_come_in():
    first = shards.assign(12, MEMBERS)
    for order in itertools.permutations(MEMBERS):
        assert shards.assign(12, list(order)) == first
    assert shards.assign(12, MEMBERS + MEMBERS) == first
    assert set(first) == set(range(12)) and set(first.values()) <= set(MEMBERS)


@pytest.mark.parametrize("count", range(3, 13))
def test_assignment_is_balanced_within_one_for_three_members(count):
    for members in (MEMBERS, ["replica-%d" % i for i in range(3)], ["x", "y", "z"]):
        per = [len(shards.owned_by(count, members, m)) for m in members]
        assert max(per) - min(per) <= 1, (members, per)
        assert sum(per) == count


@pytest.mark.parametrize("count", range(3, 13))
def test_a_member_leaving_moves_only_its_own_shards(count):
    before = shards.assign(count, MEMBERS)
    for gone in MEMBERS:
        rest = [m for m in MEMBERS if m != gone]
        after = shards.assign(count, rest)
        moved = {s for s in range(count) if before[s] != after[s]}
        own = {s for s in range(count) if before[s] == gone}
        # Its own shards move; to keep loads within one, at most two others may move too.
        assert own <= moved and len(moved - own) <= 2, (gone, before, after)
        per = [len(shards.owned_by(count, rest, m)) for m in rest]
        assert max(per) - min(per) <= 1


def test_no_members_no_assignment():
    assert shards.assign(3, []) == {}
    assert shards.owned_by(3, [], "a") == set()
