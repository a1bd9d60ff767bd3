"""What a skipped target keeps (issue 31) is one rule for a ProxyPool and for ``proxy_pool``.

The two sides see members through different models (the controller's Proxies with revisions
and latched conditions, the module's listed instances with states), so the rule is stated on
each: ``spread.holds`` with ``pool_rollout``'s keep and delete orders, and
``pool_members.holds`` with its own. This keeps them equal on seeded random targets: the same
count held, the same members kept for any share and the same delete order, a Ready (Running)
member being a Ready one, a member on its way a Provisioning or Stopped one, a failed member
(PermanentError or QuotaExceeded latched) a Terminated one."""

from __future__ import annotations

import datetime
import random

from egress_proxies_controller.pool import rollout as pool_rollout
from egress_proxies_controller.pool import spread
from egress_proxies_controller.pool.model import Member

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pool_members

T0 = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
NOW = T0.timestamp() + 86400
STATES = {
    "ready": [contract.RUNNING],
    "on its way": [contract.PROVISIONING, contract.STOPPED],
    "failed": [contract.TERMINATED],
}


def _both(rng: random.Random, n: int) -> tuple:
    """``n`` members of target ``a`` as the controller and as the module see them (distinct
    creation times, so no tie falls to names, which the two break differently)."""
    ours, theirs = [], []
    for slot, second in enumerate(rng.sample(range(3600), n)):
        kind = rng.choice(list(STATES))
        created = T0 + datetime.timedelta(seconds=second)
        name = pool_members.member_name("web", slot)
        failure = (
            "QuotaExceeded: AddressRangeExhausted: address range is exhausted" if kind == "failed" else ""
        )
        ours.append(Member(name, "a", "r1", created.timestamp(), ready=kind == "ready", failure=failure))
        instance = contract.Instance(
            id="local/" + name,
            name=name,
            uid=pool_members.member_uid("web", "a", slot),
            state=rng.choice(STATES[kind]),
            ip="127.1.1.1" if kind == "ready" else "",
            created_at=created,
        )
        theirs.append(pool_members.Member("p", "a", slot, instance))
    return ours, theirs


def _controller_to_go(members: list, share: int) -> list:
    """The controller's members to go, in order, with a budget that holds none back."""
    plan = pool_rollout.plan(members, {"a": share}, {"a": "r1"}, NOW, 0.0, share, 0, len(members))
    return plan.deletes


def test_the_controller_and_the_module_keep_the_same_members_of_a_skipped_target():
    rng = random.Random(31)
    for _round in range(500):
        ours, theirs = _both(rng, rng.randint(0, 8))
        held = spread.holds(ours, "a", "r1")
        assert held == pool_members.holds(theirs, "a", "p") == sum(not m.failure for m in ours)
        for share in range(len(ours) + 1):
            _kept, to_go = pool_members.choose(theirs, {"a": share}, {"a": "p"})
            assert _controller_to_go(ours, share) == [m.name for m in to_go], (share, ours)
        # Capped at what it holds, a target lets only its failed members go.
        assert sorted(_controller_to_go(ours, held)) == sorted(m.name for m in ours if m.failure)
