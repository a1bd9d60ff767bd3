"""A skipped target (issue 31), as one pure decision: skip_caps -> pool_split.split -> plan.

A target that cannot take its whole share keeps every member that fits: Ready members and those
on their way (Provisioning, no failure latched) count toward what it holds; only failed members
go. Before the fix it was capped at its Ready members, 0 while the ones that fit were still
starting, and the planner deleted them."""

from __future__ import annotations

import pytest
from egress_proxies_controller.pool import rollout, spread
from egress_proxies_controller.pool.model import Member, Target

from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pool_split

NOW = 10_000.0
QUOTA = "QuotaExceeded: AddressRangeExhausted: address range is exhausted"
TARGETS = (Target("a", "p1", {}, 1, None), Target("b", "p2", {}, 1, None))


def member(spec: str) -> Member:
    """``name:state[:age]`` with state ready, prov (on its way), failed or gone (deleting)."""
    name, state, *age = spec.split(":")
    return Member(
        name,
        name[0],
        "r1",
        NOW - float(age[0] if age else 100),
        ready=state == "ready",
        deleting=state == "gone",
        failure=QUOTA if state == "failed" else "",
    )


def decide(replicas: int, specs: list, skipped: list, targets=TARGETS, configured=("p1", "p2")):
    members = [member(s) for s in specs]
    revisions = {t.name: "r1" for t in targets}
    providers = {t.name: t.provider for t in targets}
    caps = spread.skip_caps(skipped, providers, set(configured), members, revisions)
    desired = pool_split.split(replicas, targets, caps)
    plan = rollout.plan(members, desired, revisions, NOW, 0.0, replicas, 1, 1)
    return caps, desired, plan


ONE = (Target("a", "p1", {}, 1, None),)


@pytest.mark.parametrize(
    ("replicas", "specs", "caps", "desired", "deletes", "creates"),
    [
        # created over capacity (room for 2, replicas 4): the two that fit stay, the failed go
        (4, ["a0:prov", "a1:prov", "a2:failed", "a3:failed"], {"a": 2}, {"a": 2}, ["a2", "a3"], {}),
        # a failed member older than the ones on their way is still the one that goes
        (4, ["a0:failed:500", "a1:prov:50", "a2:ready:60"], {"a": 2}, {"a": 2}, ["a0"], {}),
        # the two that fit are Ready, the retry's creates failed: nothing else moves
        (4, ["a0:ready", "a1:ready", "a2:failed:5", "a3:failed:5"], {"a": 2}, {"a": 2}, ["a2", "a3"], {}),
        # scaled down while skipped: below what it holds the share rules (the oldest Ready goes)
        (1, ["a0:ready:200", "a1:ready:100"], {"a": 2}, {"a": 1}, ["a0"], {}),
        (1, ["a0:prov:200", "a1:prov:100", "a2:failed"], {"a": 2}, {"a": 1}, ["a2", "a1"], {}),
        # scaled down, still above what fits: it keeps what it holds, creates nothing
        (3, ["a0:ready", "a1:ready"], {"a": 2}, {"a": 2}, [], {}),
        # a member being deleted holds nothing
        (4, ["a0:ready", "a1:gone", "a2:failed"], {"a": 1}, {"a": 1}, ["a2"], {}),
    ],
)
def test_a_skipped_target_keeps_every_member_that_fits(replicas, specs, caps, desired, deletes, creates):
    got_caps, got_desired, plan = decide(replicas, specs, ["a"], ONE)
    assert (got_caps, got_desired, plan.deletes, plan.creates) == (caps, desired, deletes, creates)


def test_the_rest_of_a_skipped_targets_share_goes_to_the_others():
    specs = ["a0:ready", "a1:prov", "a2:failed", "b0:ready"]
    caps, desired, plan = decide(6, specs, ["a"])
    assert (caps, desired, plan.deletes, plan.creates) == ({"a": 2}, {"a": 2, "b": 4}, ["a2"], {"b": 3})


def test_a_target_whose_provider_left_the_file_holds_nothing():
    caps, desired, _plan = decide(4, ["a0:ready", "a1:prov", "b0:ready"], ["a"], configured=("p2",))
    assert (caps, desired) == ({"a": 0}, {"a": 0, "b": 4})


def test_the_keep_and_delete_orders_put_failed_members_last_and_first():
    members = [member(s) for s in ("a0:failed:900", "a1:prov:10", "a2:ready:50", "a3:failed:1")]
    assert [m.name for m in rollout.delete_order(members)] == ["a3", "a0", "a1", "a2"]
