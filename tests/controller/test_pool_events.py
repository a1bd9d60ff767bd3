"""The pool loop is driven by events (issue 30): with nothing changed a round reads nothing;
a pool comes round when it changes, when one of its members does (status included), when the
providers file's names change, and at the times it must act with no event (a member reaching
maxAge, the auth Secret re-read, the resync). Unlike test_pool_reconciler.py, no test here moves
the queue's clock past the resync unless it says so."""

from __future__ import annotations

from egress_proxies_controller.kube.informer import Informer
from egress_proxies_controller.pool.members import MemberIndex

from .pool_fakes import UID, controller, make_ready, pool_obj


class Counting:
    """Counts the reads of the Proxy cache and the auth Secret, and each pool reconciled."""

    def __init__(self, ctl):
        self.gets, self.secret_reads, self.reconciled = 0, 0, []
        get, read, reconcile = ctl.proxies.get, ctl.pools.auth_credentials, ctl.reconcile

        def counted_get(key):
            self.gets += 1
            return get(key)

        def counted_read(namespace, name):
            self.secret_reads += 1
            return read(namespace, name)

        def counted_reconcile(obj, members):
            self.reconciled.append(obj["metadata"]["name"])
            return reconcile(obj, members)

        ctl.proxies.get, ctl.pools.auth_credentials, ctl.reconcile = (
            counted_get,
            counted_read,
            counted_reconcile,
        )


def settled(ctl, *objs) -> None:
    """Pools stored and rounded until their members are Ready and nothing is due."""
    for obj in objs:
        ctl.informer.apply_event("MODIFIED", obj)
    for _round in range(4):
        ctl.round()
        make_ready(ctl)
    ctl.round()


def second_pool() -> dict:
    obj = pool_obj(replicas=2)
    obj["metadata"].update(name="api", uid="api-uid")
    return obj


def test_with_nothing_changed_a_round_reads_nothing():
    ctl = controller()
    settled(ctl, pool_obj(), second_pool())
    counting = Counting(ctl)
    for _round in range(5):
        ctl.round()
    assert (counting.gets, counting.reconciled) == (0, [])


def test_a_members_status_change_brings_only_its_pool_round():
    ctl = controller()
    settled(ctl, pool_obj(), second_pool())
    counting = Counting(ctl)
    member = next(m for m in ctl.pools.created if m["metadata"]["name"].startswith("web-"))
    member = dict(member, status=dict(member["status"], conditions=[{"type": "Ready", "status": "False"}]))
    ctl.proxies.apply_event("MODIFIED", member)
    ctl.round()
    assert counting.reconciled == ["web"]
    assert counting.gets == 3  # the pool's own members, not every cached Proxy
    assert ctl.informer.get("ns/web")["status"]["readyReplicas"] == 2


def test_a_pool_edit_brings_it_round():
    ctl = controller()
    settled(ctl, pool_obj())
    counting = Counting(ctl)
    edited = pool_obj(replicas=4)
    edited["metadata"]["finalizers"] = ctl.informer.get("ns/web")["metadata"]["finalizers"]
    ctl.informer.apply_event("MODIFIED", edited)
    ctl.round()
    assert counting.reconciled == ["web"] and len(ctl.pools.created) == 4


def test_a_change_of_the_providers_files_names_brings_every_pool_round():
    ctl = controller()
    settled(ctl, pool_obj(), second_pool())
    counting = Counting(ctl)
    ctl.configured = lambda: ["local"]
    ctl.round()
    assert sorted(counting.reconciled) == ["api", "web"]


def test_a_pool_comes_round_when_its_oldest_member_reaches_max_age():
    ctl = controller()
    ctl.resync = 10**6  # only maxAge brings it round here
    ctl.clock = lambda: 1_796_119_300.0  # 2026-12-01T10:01:40Z
    obj = pool_obj()
    obj["spec"]["maxAge"] = "1h"
    settled(ctl, obj)
    counting = Counting(ctl)
    # the fake members were made at 10:00:00, the clock says 10:01:40: 3500 s to go
    ctl.queue_clock.now += 3499
    ctl.round()
    assert counting.reconciled == []
    ctl.queue_clock.now += 1.5
    ctl.round()
    assert counting.reconciled == ["web"]


def auth_pool(ctl) -> dict:
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "pass")}
    obj = pool_obj()
    obj["spec"]["template"]["auth"] = {"secretRef": {"name": "creds"}}
    return obj


def test_an_auth_pool_asks_its_secrets_version_every_recheck_and_reads_nothing_else():
    """Secrets are not watched: each recheck is one metadata-only read, and while the Secret is
    unchanged no reconcile follows (before, every recheck was a whole reconcile: the Secret,
    its copy and everything published read again)."""
    ctl = controller()
    settled(ctl, auth_pool(ctl))
    counting = Counting(ctl)
    reads = ctl.pools.version_reads
    ctl.queue_clock.now += ctl.auth_recheck - 0.5
    ctl.round()
    assert (ctl.pools.version_reads - reads, counting.secret_reads) == (0, 0)
    for recheck in range(1, 4):
        ctl.queue_clock.now += ctl.auth_recheck
        ctl.round()
        assert ctl.pools.version_reads - reads == recheck
    assert (counting.secret_reads, counting.reconciled) == (0, [])


def test_a_changed_auth_secret_brings_its_pool_round_at_the_next_recheck():
    ctl = controller()
    settled(ctl, auth_pool(ctl))
    counting = Counting(ctl)
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "rotated")}
    ctl.queue_clock.now += ctl.auth_recheck + 0.1
    ctl.round()
    assert counting.reconciled == ["web"]
    assert counting.secret_reads == 2, "the Secret, and the old copy its members still name"
    assert len(ctl.pools.deleted) == 1, "the roll began: one member replaced under the budget"


def test_an_auth_secret_that_cannot_be_read_is_retried_whole_every_recheck():
    """Nothing recorded for a Secret never read whole: each recheck is a reconcile, which
    reports the problem and makes its copy once the Secret is back."""
    ctl = controller()
    settled(ctl, auth_pool(ctl))
    counting = Counting(ctl)
    creds = ctl.pools.secrets.pop("creds")
    for _recheck in range(3):
        ctl.queue_clock.now += ctl.auth_recheck + 0.1
        ctl.round()
    assert counting.reconciled == ["web"] * 3
    ctl.pools.secrets["creds"] = creds
    ctl.queue_clock.now += ctl.auth_recheck + 0.1
    ctl.round()
    assert counting.reconciled == ["web"] * 4 and counting.secret_reads == 4
    ctl.round()  # its status write (the problem gone) comes back through its watch
    settled_count = len(counting.reconciled)
    ctl.queue_clock.now += ctl.auth_recheck + 0.1
    ctl.round()
    assert len(counting.reconciled) == settled_count, "read whole again: back to the version check"


def test_a_version_read_that_fails_reconciles_the_pool():
    """A version that cannot be read never passes for unchanged: the pool is reconciled, which
    reads the Secret itself and reports what it meets."""
    ctl = controller()
    settled(ctl, auth_pool(ctl))
    counting = Counting(ctl)

    def refused(_namespace, _name):
        raise RuntimeError("Forbidden")

    ctl.pools.secret_version = refused
    ctl.queue_clock.now += ctl.auth_recheck + 0.1
    ctl.round()
    assert counting.reconciled == ["web"]


def test_without_an_event_a_pool_is_still_reconciled_at_the_resync():
    ctl = controller()
    settled(ctl, pool_obj())
    counting = Counting(ctl)
    ctl.queue_clock.now += ctl.resync + 0.1
    ctl.round()
    assert counting.reconciled == ["web"]


def test_a_pool_gone_is_forgotten_on_its_deletion_event():
    ctl = controller()
    settled(ctl, pool_obj())
    assert "ns/web" in ctl._seen
    del ctl.informer.cache["ns/web"]
    ctl.informer.on_change("ns/web")  # the watch's DELETED event
    ctl.round()
    assert "ns/web" not in ctl._seen


def test_the_member_index_follows_owner_changes_and_deletions():
    index = MemberIndex()

    def proxy(owner: str) -> dict:
        refs = [{"apiVersion": "crawl.example.com/v1alpha1", "kind": "ProxyPool", "name": owner, "uid": "u"}]
        refs[0]["controller"] = True
        return {"metadata": {"name": "p", "namespace": "ns", "ownerReferences": refs}}

    assert index.changed("ns/p", None, proxy("a")) == ["ns/a"]
    assert sorted(index.changed("ns/p", proxy("a"), proxy("b"))) == ["ns/a", "ns/b"]
    assert (index.of("ns/a"), index.of("ns/b")) == ([], ["ns/p"])
    assert index.changed("ns/p", proxy("b"), None) == ["ns/b"]
    assert index.of("ns/b") == []
    assert index.changed("ns/q", None, {"metadata": {"name": "q", "namespace": "ns"}}) == []


def test_the_informer_tells_its_watchers_every_change_status_included():
    informer = Informer(None, None, lambda _key: None, lister=lambda *a, **kw: None)
    told = []
    informer.watchers.append(lambda key, old, new: told.append((key, old is None, new is None)))
    obj = {
        "metadata": {"name": "p", "namespace": "ns", "uid": UID, "resourceVersion": "1", "finalizers": ["f"]}
    }
    informer.apply_event("MODIFIED", obj)
    informer.apply_event(
        "MODIFIED", {**obj, "metadata": {**obj["metadata"], "resourceVersion": "2"}, "status": {"state": "x"}}
    )
    gone = {**obj["metadata"], "resourceVersion": "3", "deletionTimestamp": "t", "finalizers": []}
    informer.apply_event("DELETED", {**obj, "metadata": gone})
    assert told == [("ns/p", True, False), ("ns/p", False, False), ("ns/p", False, True)]
