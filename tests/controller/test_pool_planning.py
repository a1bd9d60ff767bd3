"""The pool's pure planners (the weighted split is module_utils' pool_split, proved in
tests/unit/test_pool_split.py): the rolling budget,
the rollout plan (creates, deletes, never below replicas - maxUnavailable Ready, never above
replicas + maxSurge members) and the scale-down order (newest not-Ready first, then oldest)."""

from __future__ import annotations

import pytest
from egress_proxies_controller.pool import rollout as pool_rollout
from egress_proxies_controller.pool.model import Member, Pool, parse_duration

NOW = 10_000.0


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "expected"),
    [
        (10, "25%", "25%", (3, 2)),  # surge rounds up, unavailable down
        (4, 0, 1, (0, 1)),
        (4, 0, 0, (0, 1)),  # both zero would never move
        (3, "10%", "10%", (1, 0)),
        (6, 2, "50%", (2, 3)),
    ],
)
def test_budget_resolves_like_a_deployment(replicas, surge, unavailable, expected):
    assert pool_rollout.budget(replicas, surge, unavailable) == expected


def m(name, target="a", rev="r1", age=100.0, ready=True, deleting=False) -> Member:
    return Member(name, target, rev, NOW - age, ready and not deleting, deleting)


def plan(members, desired, replicas, surge=1, unavailable=1, max_age=0.0, revisions=None):
    return pool_rollout.plan(
        members,
        desired,
        revisions or dict.fromkeys(desired, "r1"),
        NOW,
        max_age,
        replicas,
        surge,
        unavailable,
    )


def test_scale_up_creates_what_each_target_lacks():
    p = plan([m("x1"), m("y1", "b")], {"a": 4, "b": 2}, 6, surge=0)
    assert p.creates == {"a": 3, "b": 1} and p.deletes == []


def test_creates_stop_at_replicas_plus_surge():
    old = [m("o%d" % i, rev="r0") for i in range(4)]
    p = plan(old, {"a": 4}, 4, surge=1, unavailable=0)
    assert p.creates == {"a": 1}  # 4 members + 1 surge
    assert p.deletes == []  # no Ready member may go: 4 - 0 unavailable
    deleting = [*old[:3], m("o3", rev="r0", deleting=True)]
    assert plan(deleting, {"a": 4}, 4, surge=0, unavailable=1).creates == {}  # its instance still exists


def test_rotation_never_goes_below_replicas_minus_unavailable():
    old = [m("o%d" % i, rev="r0", age=200 - i) for i in range(6)]  # o0 the oldest
    p = plan(old, {"a": 6}, 6, surge=0, unavailable=1)
    assert p.creates == {} and p.deletes == ["o0"]  # the oldest only: 5 Ready remain
    # o0 being deleted: nothing more may go until its replacement is Ready
    step = [m("o0", rev="r0", age=200, deleting=True), *old[1:]]
    p = plan(step, {"a": 6}, 6, surge=0, unavailable=1)
    assert p.creates == {} and p.deletes == []
    step = [*old[1:], m("n0", age=1, ready=False)]
    p = plan(step, {"a": 6}, 6, surge=0, unavailable=1)
    assert p.creates == {} and p.deletes == []
    step = [*old[1:], m("n0", age=1)]
    assert plan(step, {"a": 6}, 6, surge=0, unavailable=1).deletes == ["o1"]


def test_members_older_than_max_age_are_replaced():
    members = [m("young", age=10), m("old", age=500)]
    p = plan(members, {"a": 2}, 2, surge=1, unavailable=0, max_age=300)
    assert p.creates == {"a": 1} and p.deletes == []
    members.append(m("new", age=1))
    assert plan(members, {"a": 2}, 2, surge=1, unavailable=0, max_age=300).deletes == ["old"]


def test_scale_down_removes_newest_unready_first_then_oldest():
    members = [
        m("ready-old", age=300),
        m("ready-mid", age=200),
        m("ready-new", age=100),
        m("unready-old", age=250, ready=False),
        m("unready-new", age=5, ready=False),
    ]
    assert [x.name for x in pool_rollout.delete_order(members)] == [
        "unready-new",
        "unready-old",
        "ready-old",
        "ready-mid",
        "ready-new",
    ]
    p = plan(members, {"a": 2}, 2, unavailable=0)
    assert p.deletes == ["unready-new", "unready-old", "ready-old"]  # keeps the two newest Ready
    p = plan(members, {"a": 4}, 4, unavailable=0)
    assert p.deletes == ["unready-new"]


def test_a_target_taken_out_of_the_split_moves_under_the_budget():
    members = [m("a1"), m("a2"), m("b1", "b"), m("b2", "b")]
    p = plan(members, {"a": 4, "b": 0}, 4, surge=1, unavailable=1)
    assert p.creates == {"a": 1}
    assert p.deletes == ["b1"]  # one Ready member may go
    assert not p.settled


def test_settled_only_when_every_kept_member_is_current_and_ready():
    assert plan([m("a1"), m("a2")], {"a": 2}, 2).settled
    assert not plan([m("a1"), m("a2", ready=False)], {"a": 2}, 2).settled


def test_revision_changes_with_template_target_and_rotation_token():
    def pool(**spec) -> Pool:
        meta = {"name": "p", "namespace": "ns", "uid": "u", "annotations": spec.pop("annotations", {})}
        return Pool.from_object({"metadata": meta, "spec": spec})

    base = pool(template={"port": 3128}, spread=[{"name": "a", "provider": "x", "weight": 2}])
    rev = base.revision(base.targets[0])
    assert rev == pool(
        template={"port": 3128}, spread=[{"name": "a", "provider": "x", "weight": 5}]
    ).revision(base.targets[0])  # a weight is no revision: it changes counts, not members
    other = pool(template={"port": 3130}, spread=[{"name": "a", "provider": "x"}])
    assert other.revision(other.targets[0]) != rev
    moved = pool(template={"port": 3128}, spread=[{"name": "a", "provider": "y"}])
    assert moved.revision(moved.targets[0]) != rev
    rotated = pool(
        template={"port": 3128},
        spread=[{"name": "a", "provider": "x"}],
        annotations={"crawl.example.com/rotate-now": "2026-12-01T10:00:00Z"},
    )
    assert rotated.revision(rotated.targets[0]) != rev
    assert base.member_spec(base.targets[0]) == {"port": 3128, "provider": "x"}


def test_parse_duration():
    assert parse_duration("90s") == 90 and parse_duration("1h30m") == 5400 and parse_duration("") == 0
