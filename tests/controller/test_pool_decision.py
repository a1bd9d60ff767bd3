"""pool/decision.py: what one pool does next, decided from a snapshot with no I/O (issue 30:
decisions pure and table-tested, apart from the loop that carries them out)."""

from __future__ import annotations

import pytest
from egress_proxies_controller.pool.decision import decide, degraded, member_body, why
from egress_proxies_controller.pool.model import Member, Pool

from .pool_fakes import pool_obj

NOW = 1_764_583_300.0
STAMP = "2026-12-01T10:01:40Z"


def pool(**spec) -> Pool:
    obj = pool_obj(replicas=3)
    obj["spec"].update(spec)
    return Pool.from_object(obj)


def member(name, target="main", revision="r1", created=NOW - 60, **kw) -> Member:
    return Member(name=name, target=target, revision=revision, created=created, ready=True, **kw)


REVISIONS = {"main": "r1", "side": "r1"}


@pytest.mark.parametrize(
    ("one", "spec", "reason"),
    [
        (member("a", target="gone"), {}, "TargetRemoved"),
        (member("a", revision="r0"), {}, "Outdated"),
        (member("a", created=NOW - 7200), {"maxAge": "1h"}, "MaxAge"),
        (member("a", failure="PermanentError: Bad: no"), {}, "Failed"),
        (member("a"), {}, "ScaleDown"),
    ],
)
def test_why_a_member_goes(one, spec, reason):
    assert why(one, REVISIONS, pool(**spec), NOW) == reason


def test_a_target_whose_provider_left_is_skipped_and_one_with_a_failed_member_too():
    members = [member("a", target="side", failure="QuotaExceeded: q: full")]
    skipped = degraded(pool(), members, REVISIONS, {"local"}, NOW, STAMP, 300.0)
    assert skipped["side"][0] == "provider 'second' is not in the providers file"
    skipped = degraded(pool(), members, REVISIONS, {"local", "second"}, NOW, STAMP, 300.0)
    assert skipped == {"side": ("member a: QuotaExceeded: q: full", STAMP)}


def test_an_empty_pool_creates_its_split_and_deletes_nothing():
    decision = decide(pool(), [], REVISIONS, {"local", "second"}, NOW, STAMP, 300.0)
    assert decision.desired == {"main": 2, "side": 1}
    assert sum(decision.plan.creates.values()) == 3 and decision.reasons == {}


def test_a_scale_down_deletes_with_its_reason():
    members = [member("a"), member("b"), member("c"), member("d", target="side")]
    decision = decide(pool(replicas=2), members, REVISIONS, {"local", "second"}, NOW, STAMP, 300.0)
    assert set(decision.reasons.values()) == {"ScaleDown"} and len(decision.reasons) == 2


def test_a_new_member_is_owned_by_its_pool_and_labelled_with_its_target_and_revision():
    body = member_body(pool(), pool().targets[0], REVISIONS)
    meta = body["metadata"]
    assert meta["generateName"] == "web-" and meta["ownerReferences"][0]["uid"] == "pool-uid"
    assert sorted(meta["labels"].values()) == ["main", "r1", "web"]
