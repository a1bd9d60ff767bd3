"""Which instances are a pool's members, which slots new ones take, and which members go."""

from __future__ import annotations

import datetime
import types

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pool_members

T0 = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def _instance(name, uid, state=contract.RUNNING, minute=0):
    return contract.Instance(
        id="local/" + name,
        name=name,
        uid=uid,
        state=state,
        ip="127.1.1.1" if state == contract.RUNNING else "",
        created_at=T0 + datetime.timedelta(minutes=minute),
        installation="i",
    )


def _member(target, slot, state=contract.RUNNING, minute=0, provider=None):
    uid = pool_members.member_uid("web", target, slot)
    return pool_members.Member(
        provider or target, target, slot, _instance("web-%d" % slot, uid, state, minute)
    )


def test_names_and_uids_follow_from_pool_target_and_slot_and_parse_back():
    assert pool_members.member_name("web", 3) == "web-3"
    uid = pool_members.member_uid("web", "eu-b", 3)
    assert uid == "pool_web_eu-b_3"
    assert pool_members.parse_uid(uid) == ("web", "eu-b", 3)
    for other in (
        "pool_web_eu-b",
        "pool_web_eu_b_3_4",
        "pool_web_a_03",
        "pool_Web_a_3",
        "x" + uid,
        uid + "\n",
        "",
    ):
        assert pool_members.parse_uid(other) is None, other
    longest = pool_members.member_uid(
        "p" * pool_members.MAX_POOL_CHARS, "t" * pool_members.MAX_TARGET_CHARS, 19999
    )
    assert len(longest) <= 63  # a Kubernetes and a Compute Engine label value


def test_only_instances_whose_uid_and_name_say_this_pool_are_members():
    listed = [
        _instance("web-0", "pool_web_a_0"),
        _instance("web-1", "pool_webby_a_1"),  # another pool
        _instance("webby-1", "pool_webby_a_1"),
        _instance("proxy-abc", "6f1c7c1e-5d07-4a0e-9b0e-1b2f3c4d5e6f"),  # a plain proxy_instance
        _instance("web-7", "pool_web_a_2"),  # name and uid disagree: not trusted
    ]
    members = pool_members.members_of("web", "a", listed)
    assert [(m.name, m.target, m.slot, m.provider) for m in members] == [("web-0", "a", 0, "a")]


def test_scale_down_keeps_newest_running_and_removes_unready_newest_first_then_oldest():
    members = [
        _member("a", 0, minute=0),
        _member("a", 1, minute=1),
        _member("a", 2, minute=2),
        _member("a", 3, contract.PROVISIONING, minute=3),
        _member("a", 4, contract.STOPPED, minute=4),
    ]
    kept, to_go = pool_members.choose(members, {"a": 2}, {"a": "a"})
    assert sorted(m.slot for m in kept) == [1, 2]
    assert [m.slot for m in to_go] == [4, 3, 0]
    kept, to_go = pool_members.choose(members, {"a": 4}, {"a": "a"})
    assert sorted(m.slot for m in kept) == [0, 1, 2, 3]  # then the oldest not-Running
    assert [m.slot for m in to_go] == [4]


def test_members_of_a_target_gone_from_the_spread_or_moved_provider_go():
    members = [_member("a", 0), _member("old", 1), _member("b", 2, provider="elsewhere")]
    kept, to_go = pool_members.choose(members, {"a": 1, "b": 1}, {"a": "a", "b": "b"})
    assert [m.slot for m in kept] == [0]
    assert sorted(m.slot for m in to_go) == [1, 2]


def test_new_members_take_the_smallest_free_slots():
    assert pool_members.free_slots({0, 2, 3}, 3) == [1, 4, 5]
    assert pool_members.free_slots(set(), 0) == []


def test_a_skipped_target_holds_every_member_that_has_not_failed():
    """Running, Provisioning (a member from an earlier run still starting) and Stopped (this run
    starts it) count; Terminated and another provider's do not (issue 31: the controller's rule)."""
    members = [
        _member("a", 0, contract.RUNNING),
        _member("a", 1, contract.PROVISIONING),
        _member("a", 2, contract.STOPPED),
        _member("a", 3, contract.TERMINATED, minute=-5),
        _member("a", 4, provider="elsewhere"),
    ]
    assert pool_members.holds(members, "a", "a") == 3
    kept, to_go = pool_members.choose(members, {"a": 3}, {"a": "a"})
    assert sorted(m.slot for m in kept) == [0, 1, 2]
    assert [m.slot for m in to_go] == [3, 4]  # the Terminated one first


def test_the_runner_caps_a_skipped_target_at_what_it_holds_not_only_running_or_fresh():
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pools

    spec = types.SimpleNamespace(targets=[types.SimpleNamespace(name="a", provider="a")])
    listed = [_member("a", 0), _member("a", 1, contract.PROVISIONING)]
    growth = pools.Growth(_Rooms({}), spec, listed, None, 1)
    growth.degraded = {"a": {"target": "a"}}
    assert growth.caps() == {"a": 2}


class _Rooms:
    """A ``ProxyModule`` stand-in whose providers know their capacity (or not: ``None``)."""

    def __init__(self, rooms: dict):
        self.rooms = rooms

    def provider(self, name):
        room = self.rooms.get(name)
        return types.SimpleNamespace(capacity=lambda: None if room is None else (room, "room for %d" % room))


def test_a_share_past_a_providers_capacity_is_cut_up_front_and_reported():
    """Issue 28 §7: with a /28 local target beside one without a known bound, a pool of 1000
    gave the /28 half and tried (and failed) 486 creates, one failure each in the result. Its
    share is now cut to what it can ever hold, the rest goes to the other target, and the cut is
    reported as a skip is."""
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pool_params, pools

    spec = types.SimpleNamespace(
        count=1000,
        targets=[pool_params.Target("small", "small", None, 1), pool_params.Target("big", "big", None, 1)],
    )
    growth = pools.Growth(_Rooms({"small": 14}), spec, [], None, 1)
    desired = growth.desired()
    assert desired == {"small": 14, "big": 986}
    limited = growth.limited(desired)
    assert list(limited) == ["small"]
    assert limited["small"]["msg"] == (
        "a share of 500 is more than provider small can ever hold (room for 14); it holds at most 14"
    )
    roomy = pools.Growth(_Rooms({"small": 600}), spec, [], None, 1)
    assert roomy.desired() == {"small": 500, "big": 500}
    assert roomy.limited(roomy.desired()) == {}


def test_a_name_on_two_providers_is_kept_once_and_its_target_gets_a_free_name():
    """Issue 28 §3: one name on two targets' providers (what two racing runs left, or a member
    made by hand) was kept on both: the pool then held one name twice. The copy first in the
    keep order stays (the Running one), the other goes."""
    members = [
        _member("a", 0),
        _member("a", 5, state=contract.PROVISIONING),
        _member("b", 5),
    ]
    kept, to_go = pool_members.choose(members, {"a": 2, "b": 1}, {"a": "a", "b": "b"})
    assert sorted((m.target, m.name) for m in kept) == [("a", "web-0"), ("b", "web-5")]
    assert [(m.target, m.name) for m in to_go] == [("a", "web-5")]


def _race_left(minutes: dict) -> list:
    """What two runs of ``count: 6``, weights la 2 and lb 1, spreads in opposite orders, both
    listing an empty pool, leave (issue 28 §3): la 0-3 and lb 4-5 from one, lb 0-1 and la 2-5
    from the other (la 2-3 made once: the same name and uid on one provider), 10 instances;
    ``minutes`` gives each (target, slot) its creation minute."""
    made = [("la", s) for s in range(6)] + [("lb", s) for s in (0, 1, 4, 5)]
    return [_member(t, s, minute=minutes[(t, s)]) for t, s in made]


SPREAD = {"la": "la", "lb": "lb"}


def test_trim_keeps_count_members_one_per_name_oldest_first():
    """Issue 28 §3: the listing after the race holds 10 members and four names twice; the trim
    keeps 6 names, each once (its oldest copy), and everything else goes."""
    # made in this order (lb-0 first, la-5 last): each name's lb copy is the older
    order = ["lb0", "la0", "lb1", "la1", "la2", "la3", "lb4", "la4", "lb5", "la5"]
    minutes = {(key[:2], int(key[2:])): minute for minute, key in enumerate(order)}
    left = _race_left(minutes)
    kept, surplus = pool_members.trim(left, 6, SPREAD)
    assert sorted(m.name for m in kept) == ["web-%d" % s for s in range(6)]
    assert sorted((m.provider, m.name) for m in kept) == [
        ("la", "web-2"),
        ("la", "web-3"),
        ("lb", "web-0"),
        ("lb", "web-1"),
        ("lb", "web-4"),
        ("lb", "web-5"),
    ]
    assert sorted((m.provider, m.name) for m in surplus) == [
        ("la", "web-0"),
        ("la", "web-1"),
        ("la", "web-4"),
        ("la", "web-5"),
    ]


def test_a_run_alone_trims_nothing_and_the_order_of_the_spread_does_not_matter():
    alone = [_member("la", s, minute=s) for s in range(4)] + [_member("lb", s, minute=s) for s in (4, 5)]
    kept, surplus = pool_members.trim(alone, 6, SPREAD)
    assert surplus == [] and len(kept) == 6
    left = _race_left({(t, s): (7 * s + (t == "lb")) % 5 for t in ("la", "lb") for s in range(6)})
    first = pool_members.trim(left, 6, SPREAD)
    for order in (list(reversed(left)), sorted(left, key=lambda m: (m.provider, -m.slot))):
        again = pool_members.trim(order, 6, {"lb": "lb", "la": "la"})
        assert [(m.provider, m.name) for m in again[0]] == [(m.provider, m.name) for m in first[0]]
        assert {(m.provider, m.name) for m in again[1]} == {(m.provider, m.name) for m in first[1]}


def test_no_two_listings_trim_below_count_and_the_last_leaves_exactly_the_same_members():
    """Every interleaving of two unlocked runs, as listings: each run trims what it listed (any
    part of what exists, a member another run is deleting included). A member the full listing
    keeps is never trimmed by any listing, so two runs never leave fewer than ``count``; the run
    listing last, after the other's trim, leaves exactly those ``count``."""
    for seed in range(3):
        left = _race_left(
            {(t, s): (5 * s + 3 * (t == "lb") + seed) % 7 for t in ("la", "lb") for s in range(6)}
        )
        everything = {m.identity for m in pool_members.trim(left, 6, SPREAD)[0]}
        for mask in range(1 << len(left)):
            seen = [m for i, m in enumerate(left) if mask >> i & 1]
            _kept, surplus = pool_members.trim(seen, 6, SPREAD)
            assert not everything & {m.identity for m in surplus}, (seed, mask)
            gone = {m.identity for m in surplus}
            last = [m for m in left if m.identity not in gone]
            kept_last, surplus_last = pool_members.trim(last, 6, SPREAD)
            assert {m.identity for m in kept_last} == everything, (seed, mask)
            assert {m.identity for m in last} - {m.identity for m in surplus_last} == everything


def test_a_trim_never_removes_a_kept_instance_seen_through_another_provider_but_removes_other_targets():
    """A kept member's instance listed by another provider of its backend is a view, not surplus;
    a member of a target the spread no longer has is surplus."""
    uid = pool_members.member_uid("web", "a", 0)
    own = pool_members.Member("a", "a", 0, _instance("web-0", uid), backend="store")
    view = pool_members.Member("b", "a", 0, _instance("web-0", uid), backend="store")
    retired = _member("gone", 1)
    kept, surplus = pool_members.trim([view, own, retired], 2, {"a": "a", "b": "b"})
    assert kept == [own]
    assert surplus == [retired]
