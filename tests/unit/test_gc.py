"""Unit tests for runners/gc.py: the decision table and a sweep over small in-memory providers."""

from __future__ import annotations

import datetime
import time

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import RUNNING, Instance
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import uid_shards
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import gc, orphans

NOW = datetime.datetime(2026, 1, 2, 12, 0, 0, tzinfo=datetime.UTC)
MIN_AGE = 600
INSTALL = "prod"


def inst(uid="orphan-uid", age=None, installation=INSTALL, created_at="age", name="proxy-x") -> Instance:
    if created_at == "age":
        created_at = NOW - datetime.timedelta(seconds=3600 if age is None else age)
    return Instance(
        id="fake/" + name,
        name=name,
        uid=uid,
        state=RUNNING,
        ip="127.0.0.1",
        created_at=created_at,
        installation=installation,
    )


@pytest.mark.parametrize(
    "instance,delete,reason",
    [
        pytest.param(inst(uid=""), False, gc.KEEP_EMPTY_UID, id="empty uid"),
        pytest.param(inst(uid="", installation="other"), False, gc.KEEP_EMPTY_UID, id="empty uid first"),
        pytest.param(inst(installation="other"), False, gc.KEEP_OTHER_INSTALLATION, id="other installation"),
        pytest.param(inst(installation=""), False, gc.KEEP_OTHER_INSTALLATION, id="no installation mark"),
        pytest.param(inst(uid="live-uid"), False, gc.KEEP_LIVE, id="live"),
        pytest.param(inst(uid="live-uid", age=0), False, gc.KEEP_LIVE, id="live and young"),
        pytest.param(inst(age=10), False, gc.KEEP_YOUNG, id="young"),
        pytest.param(inst(age=MIN_AGE - 0.001), False, gc.KEEP_YOUNG, id="just under min age"),
        pytest.param(inst(age=MIN_AGE), True, gc.DELETE_ORPHAN, id="exactly min age"),
        pytest.param(inst(age=-60), False, gc.KEEP_YOUNG, id="created in the future"),
        pytest.param(inst(created_at=None), True, gc.DELETE_ORPHAN, id="no created_at counts as old"),
        pytest.param(inst(age=MIN_AGE * 10), True, gc.DELETE_ORPHAN, id="orphan"),
    ],
)
def test_decide(instance, delete, reason):
    decision = gc.decide(instance, frozenset({"live-uid"}), INSTALL, MIN_AGE, NOW)
    assert (decision.delete, decision.reason) == (delete, reason)


def test_zero_min_age_collects_even_fresh_orphans():
    assert gc.decide(inst(age=0), frozenset(), INSTALL, 0, NOW).delete


class FakeProvider:
    """Lists what it holds; delete removes it (or fails for ids in ``fail_delete``)."""

    def __init__(self, name, instances=(), list_error=None, fail_delete=()):
        self.name = name
        self.instances = {i.id: i for i in instances}
        self.list_error = list_error
        self.fail_delete = set(fail_delete)
        self.calls = []

    def list_by_tag(self, deadline):
        self.calls.append(("list",))
        if self.list_error is not None:
            raise self.list_error
        return list(self.instances.values())

    def delete(self, provider_id, deadline):
        self.calls.append(("delete", provider_id))
        if provider_id in self.fail_delete:
            raise errors.transient("delete", self.name, provider_id, "backend busy")
        self.instances.pop(provider_id, None)


def sweep(providers, dry_run=False):
    return gc.sweep(providers, ["live-uid", ""], INSTALL, MIN_AGE, 10, dry_run=dry_run, now=NOW)


def test_sweep_deletes_orphans_and_keeps_the_rest():
    orphan, live, young = (
        inst(name="proxy-o"),
        inst(uid="live-uid", name="proxy-l"),
        inst(age=1, name="proxy-y"),
    )
    provider = FakeProvider("p", [orphan, live, young])
    report = sweep({"p": provider})
    assert [e["id"] for e in report["deleted"]] == ["fake/proxy-o"]
    assert report["deleted"][0]["reason"] == gc.DELETE_ORPHAN and report["deleted"][0]["provider"] == "p"
    assert sorted((e["id"], e["reason"]) for e in report["kept"]) == [
        ("fake/proxy-l", gc.KEEP_LIVE),
        ("fake/proxy-y", gc.KEEP_YOUNG),
    ]
    assert report["errors"] == [] and report["skipped"] == [] and report["would_delete"] == []
    assert set(provider.instances) == {"fake/proxy-l", "fake/proxy-y"}


def test_sweep_skips_a_provider_whose_list_fails():
    broken = FakeProvider(
        "broken", [inst(name="proxy-b")], list_error=errors.permanent("list", "broken", "", "403")
    )
    plain = FakeProvider("plain", [inst(name="proxy-c")], list_error=OSError("connection refused"))
    fine = FakeProvider("fine", [inst(name="proxy-f")])
    report = sweep({"broken": broken, "plain": plain, "fine": fine})
    assert report["skipped"] == ["broken", "plain"]
    assert [(e["provider"], e["id"], e["error_class"]) for e in report["errors"]] == [
        ("broken", "", errors.PERMANENT),
        ("plain", "", errors.TRANSIENT),
    ]
    assert "403" in report["errors"][0]["msg"]
    assert [c for c in broken.calls if c[0] == "delete"] == []
    assert [c for c in plain.calls if c[0] == "delete"] == []
    assert [e["id"] for e in report["deleted"]] == ["fake/proxy-f"]


def test_sweep_dry_run_deletes_nothing():
    provider = FakeProvider("p", [inst(name="proxy-o"), inst(uid="live-uid", name="proxy-l")])
    report = sweep({"p": provider}, dry_run=True)
    assert [e["id"] for e in report["would_delete"]] == ["fake/proxy-o"]
    assert report["deleted"] == []
    assert [c for c in provider.calls if c[0] == "delete"] == []
    assert len(provider.instances) == 2


def test_sweep_reports_a_failed_delete_and_goes_on():
    provider = FakeProvider("p", [inst(name="proxy-a"), inst(name="proxy-b")], fail_delete={"fake/proxy-a"})
    report = sweep({"p": provider})
    assert [e["id"] for e in report["deleted"]] == ["fake/proxy-b"]
    assert report["errors"] == [
        {
            "provider": "p",
            "id": "fake/proxy-a",
            "error_class": errors.TRANSIENT,
            "msg": "p delete fake/proxy-a: transient: backend busy",
        }
    ]
    assert report["skipped"] == []


def test_sweep_processes_providers_in_sorted_order():
    seen = []

    class Recording(FakeProvider):
        def list_by_tag(self, deadline):
            seen.append(self.name)
            return super().list_by_tag(deadline)

    providers = {n: Recording(n, [inst(name="proxy-" + n)]) for n in ("zeta", "alpha", "mid")}
    report = sweep(providers)
    assert seen == ["alpha", "mid", "zeta"]
    assert [e["provider"] for e in report["deleted"]] == ["alpha", "mid", "zeta"]


def test_empty_uids_in_the_live_set_protect_nothing():
    # "" in live_uids must not turn an empty-uid instance into "live"; it stays empty-uid (kept).
    report = sweep({"p": FakeProvider("p", [inst(uid="", name="proxy-e")])})
    assert [(e["id"], e["reason"]) for e in report["kept"]] == [("fake/proxy-e", gc.KEEP_EMPTY_UID)]


class SlowProvider(FakeProvider):
    """Each delete takes ``seconds`` and honours its deadline, like a real backend call."""

    def __init__(self, name, instances, seconds):
        super().__init__(name, instances)
        self.seconds = seconds

    def delete(self, provider_id, deadline):
        deadline.sleep(self.seconds)
        deadline.check("delete")
        super().delete(provider_id, deadline)


def test_each_delete_has_its_own_deadline_and_deletes_run_concurrently():
    """Issue 15: one deadline for the whole sweep left later orphans undeleted; one at a time
    made a large sweep take orphans x delete time."""
    provider = SlowProvider("p", [inst(name="proxy-%d" % i) for i in range(8)], seconds=0.4)
    started = time.monotonic()
    report = gc.sweep({"p": provider}, [], INSTALL, MIN_AGE, 1.0, now=NOW, concurrency=8)
    elapsed = time.monotonic() - started
    assert len(report["deleted"]) == 8 and report["remaining"] == [] and report["errors"] == []
    assert elapsed < 2.0, "8 deletes of 0.4 s took %.1f s: not concurrent" % elapsed


def test_what_could_not_be_deleted_is_remaining():
    provider = FakeProvider("p", [inst(name="proxy-a"), inst(name="proxy-b")], fail_delete={"fake/proxy-a"})
    report = sweep({"p": provider})
    assert [e["id"] for e in report["remaining"]] == ["fake/proxy-a"]
    assert [e["id"] for e in report["deleted"]] == ["fake/proxy-b"]


class _Module:
    def __init__(self):
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


class _PM:
    """The parts of ProxyModule that orphans.run uses."""

    check_mode = False
    diff_mode = False

    def __init__(self, providers):
        self._providers = providers
        self.params = {"min_age": "0", "timeout": 5.0, "concurrency": 4, "live_uids": [], "provider": None}
        self.raw_params = dict(self.params)
        self.config = type("C", (), {"installation": INSTALL})()
        self.module = _Module()

    def selected_provider(self):
        return None

    def providers(self, only=None):
        return self._providers


def test_a_sweep_that_leaves_orphans_fails_incomplete_and_says_what_is_left():
    provider = FakeProvider("p", [inst(name="proxy-a"), inst(name="proxy-b")], fail_delete={"fake/proxy-a"})
    result = orphans.run(_PM({"p": provider}))
    assert result["incomplete"] is True
    assert [e["id"] for e in result["remaining"]] == ["fake/proxy-a"]
    assert result["failed_msg"].startswith("gc incomplete: 1 of 2 orphans could not be deleted")
    assert result["error_class"] == errors.TRANSIENT


def _uid_in_shard(shard: int, count: int, prefix: str = "u") -> str:
    return next(
        u for u in ("%s-%d" % (prefix, i) for i in range(1000)) if uid_shards.shard_of(u, count) == shard
    )


def test_decide_keeps_other_shards_and_collects_owned_ones():
    mine, theirs = _uid_in_shard(1, 3), _uid_in_shard(2, 3)
    owned = (3, frozenset({0, 1}))
    assert gc.decide(inst(uid=mine), frozenset(), INSTALL, MIN_AGE, NOW, owned) == gc.Decision(
        True, gc.DELETE_ORPHAN
    )
    assert gc.decide(inst(uid=theirs), frozenset(), INSTALL, MIN_AGE, NOW, owned) == gc.Decision(
        False, gc.KEEP_OTHER_SHARD
    )
    # An empty uid is never collected, whatever shard it would hash to.
    assert gc.decide(inst(uid=""), frozenset(), INSTALL, MIN_AGE, NOW, (1, frozenset({0}))).reason == (
        gc.KEEP_EMPTY_UID
    )
    # Owning every shard is the same as no filter.
    assert gc.decide(inst(uid=theirs), frozenset(), INSTALL, MIN_AGE, NOW, (3, frozenset({0, 1, 2}))).delete


@pytest.mark.parametrize(
    "value,field",
    [
        ([1], "uid_shards: must be a dict"),
        ({"owned": []}, "uid_shards.count: required"),
        ({"count": 0, "owned": []}, "uid_shards.count: must be between 1"),
        ({"count": "x", "owned": []}, "uid_shards.count: must be an integer"),
        ({"count": 3}, "uid_shards.owned: required"),
        ({"count": 3, "owned": [0, 3]}, "uid_shards.owned[1]: 3 is not a shard of 3"),
        ({"count": 3, "owned": [-1]}, "uid_shards.owned[0]"),
        ({"count": 3, "owned": [True]}, "uid_shards.owned[0]: must be an integer"),
        ({"count": 3, "owned": [], "extra": 1}, "uid_shards: unknown key(s) extra"),
    ],
)
def test_uid_shards_bad_input_names_the_field(value, field):
    with pytest.raises(errors.UsageError) as raised:
        uid_shards.parse(value)
    assert field in str(raised.value)


def test_uid_shards_parse():
    assert uid_shards.parse(None) is None
    assert uid_shards.parse({"count": "3", "owned": ["2", 0, 2]}) == (3, frozenset({0, 2}))
    assert uid_shards.parse({"count": 4, "owned": []}) == (4, frozenset())
