"""The pool reconciler's wiring over in-memory fakes: member bodies (generated name, labels,
controller ownerReference), a skipped target and why, its share moving, the skip remembered only
for a member failure, and a pool's deletion releasing it only once no member is left."""

from __future__ import annotations

import base64
import json

from egress_proxies_controller.pool import controller as pool_reconciler
from egress_proxies_controller.pool.model import POOL_FINALIZER
from egress_proxies_controller.proxy import auth_secret

from .pool_fakes import UID, controller, make_ready, pool_obj, tick


def test_members_are_owned_labelled_and_queued_by_their_watch():
    ctl = controller()
    queued = []
    ctl.proxies.on_change = queued.append  # the Proxy informer's: the Proxy controller's queue
    ctl.informer.apply_event("MODIFIED", pool_obj())
    tick(ctl)
    assert sorted(m["spec"]["provider"] for m in ctl.pools.created) == ["local", "local", "second"]
    member = ctl.pools.created[0]["metadata"]
    assert member["generateName"] == "web-"
    assert member["labels"]["crawl.example.com/pool"] == "web"
    assert member["ownerReferences"] == [
        {
            "apiVersion": "crawl.example.com/v1alpha1",
            "kind": "ProxyPool",
            "name": "web",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert sorted(queued) == sorted("ns/" + m["metadata"]["name"] for m in ctl.pools.created)
    tick(ctl)  # counted from the cache at once: no second create
    assert len(ctl.pools.created) == 3


def test_a_target_whose_provider_leaves_is_skipped_and_comes_back_at_once():
    ctl = controller()
    ctl.informer.apply_event("MODIFIED", pool_obj())
    tick(ctl)
    make_ready(ctl)
    tick(ctl)
    ctl.configured = lambda: ["local"]
    tick(ctl)
    status = ctl.informer.get("ns/web")["status"]
    degraded = next(c for c in status["conditions"] if c["type"] == "SpreadDegraded")
    assert degraded["status"] == "True" and "target side skipped (provider 'second'" in degraded["message"]
    assert [t["desired"] for t in status["targets"]] == [3, 0]
    assert ctl.pools.created[-1]["spec"]["provider"] == "local"  # the share moved
    assert "SpreadDegraded" in ctl.events
    ctl.configured = lambda: ["local", "second"]
    tick(ctl)
    status = ctl.informer.get("ns/web")["status"]
    assert [t["desired"] for t in status["targets"]] == [2, 1]  # not held for --pool-target-retry


def test_a_member_failure_skips_its_target_for_the_retry_time():
    ctl = controller()
    ctl.informer.apply_event("MODIFIED", pool_obj())
    tick(ctl)
    side = next(m for m in ctl.pools.created if m["spec"]["provider"] == "second")
    side["status"] = {
        "conditions": [
            {"type": "QuotaExceeded", "status": "True", "reason": "QuotaExceeded", "message": "exhausted"}
        ]
    }
    ctl.proxies.apply_event("MODIFIED", side)
    tick(ctl)
    status = ctl.informer.get("ns/web")["status"]
    side_status = status["targets"][1]
    assert side_status["desired"] == 0 and "QuotaExceeded: exhausted" in side_status["degraded"]
    assert side["metadata"]["name"] in ctl.pools.deleted  # not Ready: it goes at once
    del ctl.proxies.cache["ns/" + side["metadata"]["name"]]
    tick(ctl)  # the failing member is gone, the skip is remembered
    assert ctl.informer.get("ns/web")["status"]["targets"][1]["desired"] == 0


def test_a_target_over_capacity_keeps_its_members_on_their_way_and_only_the_failed_go():
    """Issue 31: of main's 4 members 2 failed QuotaExceeded and 2 fit, still Provisioning (not
    Ready). main holds 2 (not 0: its Ready count), so only the failed ones are deleted."""
    ctl = controller()
    ctl.informer.apply_event("MODIFIED", pool_obj(replicas=6))
    tick(ctl)
    main = [m for m in ctl.pools.created if m["spec"]["provider"] == "local"]
    assert len(main) == 4
    quota = {"type": "QuotaExceeded", "status": "True", "reason": "QuotaExceeded", "message": "exhausted"}
    for failed in main[2:]:
        failed["status"] = {"conditions": [quota]}
        ctl.proxies.apply_event("MODIFIED", failed)
    tick(ctl)
    status = ctl.informer.get("ns/web")["status"]
    assert [t["desired"] for t in status["targets"]] == [2, 4]
    assert sorted(ctl.pools.deleted) == sorted(m["metadata"]["name"] for m in main[2:])


def test_deleting_a_pool_deletes_its_members_and_releases_it_when_none_is_left():
    ctl = controller()
    ctl.informer.apply_event("MODIFIED", pool_obj())
    tick(ctl)
    obj = ctl.informer.get("ns/web")
    assert obj["metadata"]["finalizers"] == [POOL_FINALIZER]
    ctl.informer.apply_event(
        "MODIFIED", dict(obj, metadata=dict(obj["metadata"], deletionTimestamp="2026-12-01T10:02:00Z"))
    )
    tick(ctl)
    assert sorted(ctl.pools.deleted) == sorted(m["metadata"]["name"] for m in ctl.pools.created)
    assert ctl.informer.get("ns/web")["metadata"]["finalizers"] == [POOL_FINALIZER]  # members still there
    ctl.proxies.cache.clear()
    tick(ctl)
    assert ctl.informer.get("ns/web")["metadata"]["finalizers"] == []


def test_a_proxy_of_another_owner_is_never_a_member():
    ctl = controller()
    stranger = {
        "metadata": {
            "name": "web-zzzzz",
            "namespace": "ns",
            "uid": "x",
            "labels": {"crawl.example.com/pool": "web", "crawl.example.com/pool-target": "main"},
            "ownerReferences": [
                {
                    "kind": "ProxyPool",
                    "apiVersion": "crawl.example.com/v1alpha1",
                    "uid": "other",
                    "controller": True,
                }
            ],
        },
        "spec": {"provider": "local"},
    }
    ctl.proxies.apply_event("MODIFIED", stranger)
    ctl.informer.apply_event("MODIFIED", pool_obj(replicas=0))
    tick(ctl)
    assert ctl.pools.deleted == [] and ctl.pools.created == []


def recording(ctl) -> list:
    """Every Event's (reason, message), the fake kube's list keeping only reasons."""
    said = []
    ctl.kube = type("K", (), {"event": lambda _s, *a, **kw: said.append((a[2], a[3]))})()
    return said


def auth_pool(replicas=3) -> dict:
    obj = pool_obj(replicas)
    obj["spec"]["template"]["auth"] = {"secretRef": {"name": "creds"}}
    return obj


def copy_of(member: dict) -> str:
    return member["spec"]["auth"]["secretRef"]["name"]


def finish_round(ctl) -> None:
    """What the Proxy reconciler does between two ticks: new members turn Ready, deleted ones go."""
    for key in list(ctl.proxies.cache):
        if ctl.proxies.cache[key]["metadata"].get("deletionTimestamp"):
            del ctl.proxies.cache[key]
    make_ready(ctl, {m["metadata"]["name"] for m in ctl.pools.created if "status" not in m})


def live(ctl) -> list:
    return [o for o in ctl.proxies.cache.values() if not o["metadata"].get("deletionTimestamp")]


def test_a_change_of_the_auth_secrets_content_rolls_the_members_under_the_budget():
    """Members name the pool's copy of the credentials (never the user's Secret, whose change
    would rotate each member in place); new content is a new copy, so a new revision: the
    members roll with maxUnavailable 1, each published with the credentials it has, and the old
    copy is deleted once no member names it. No password is in a member, the status or an Event."""
    ctl = controller()
    said = recording(ctl)
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "first-pass")}
    ctl.informer.apply_event("MODIFIED", auth_pool())
    tick(ctl)
    finish_round(ctl)
    tick(ctl)
    first = {copy_of(m) for m in live(ctl)}
    assert len(first) == 1 and next(iter(first)).startswith("web-auth-")
    (old_copy,) = first
    copy = ctl.pools.secrets[old_copy]
    assert copy["immutable"] is True and copy["metadata"]["ownerReferences"][0]["uid"] == UID
    assert base64.b64decode(copy["data"]["password"]).decode() == "first-pass"
    assert sorted(c for _n, c in ctl.publisher.urls) == [("crawler", "first-pass")] * 3
    assert ctl.informer.get("ns/web")["status"]["authSecrets"] == [old_copy]
    first_members = {m["metadata"]["name"] for m in live(ctl)}
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "second-pass")}
    ready_seen, published = [], set()
    for _tick in range(20):
        tick(ctl)
        ready_seen.append(sum(1 for o in live(ctl) if "status" in o))
        published |= set(ctl.publisher.urls)
        finish_round(ctl)
        if not first_members & {m["metadata"]["name"] for m in live(ctl)} and len(live(ctl)) == 3:
            break
    else:
        raise AssertionError("the roll did not finish: %s" % sorted(ctl.proxies.cache))
    tick(ctl)
    assert min(ready_seen) >= 2, ready_seen  # never fewer than replicas - maxUnavailable
    (new_copy,) = {copy_of(m) for m in live(ctl)}
    assert new_copy != old_copy
    # During the roll each member was listed with its own credentials: old ones with the old.
    assert {(n, c) for n, c in published if n in first_members} <= {
        (n, ("crawler", "first-pass")) for n in first_members
    }
    assert {c for n, c in published if n not in first_members} == {("crawler", "second-pass")}
    assert ctl.pools.secrets_deleted == [old_copy]
    assert ctl.informer.get("ns/web")["status"]["authSecrets"] == [new_copy]
    seen = json.dumps([ctl.pools.created, ctl.informer.get("ns/web"), said])
    assert "first-pass" not in seen and "second-pass" not in seen


def test_the_same_content_keeps_every_member_and_the_fingerprint_is_the_pools_own():
    ctl = controller()
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "pass")}
    ctl.informer.apply_event("MODIFIED", auth_pool())
    tick(ctl)
    finish_round(ctl)
    tick(ctl)
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "pass")}  # re-saved, same content
    ctl.auth = pool_reconciler.PoolAuth(ctl.pools)  # a restarted controller computes it again
    tick(ctl)
    assert ctl.pools.deleted == [] and len(ctl.pools.created) == 3
    from egress_proxies_controller.pool import auth as pool_auth

    assert pool_auth.fingerprint(UID, "crawler", "pass") != pool_auth.fingerprint("other", "crawler", "pass")
    assert pool_auth.fingerprint(UID, "crawler", "pass") != pool_auth.fingerprint(UID, "crawler", "pass2")


def test_an_unreadable_auth_secret_changes_no_member_and_says_so_once():
    ctl = controller()
    said = recording(ctl)
    ctl.informer.apply_event("MODIFIED", auth_pool())
    tick(ctl)
    tick(ctl)
    assert ctl.pools.created == [] and ctl.pools.deleted == []
    assert said == [
        (
            "PublishFailed",
            "members not changed: auth Secret ns/creds: Not Found; " + auth_secret.needs("ns", "creds"),
        )
    ]
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "bad\npass")}
    tick(ctl)
    assert ctl.pools.created == []
    assert said[-1][1] == (
        "members not changed: auth Secret ns/creds: key password contains control characters "
        "(a trailing newline from echo?)"
    )


def test_a_copy_name_taken_by_another_owner_makes_no_member():
    ctl = controller()
    said = recording(ctl)
    ctl.pools.secrets["creds"] = {"credentials": ("crawler", "pass")}
    from egress_proxies_controller.pool import auth as pool_auth

    taken = "web-auth-" + pool_auth.fingerprint(UID, "crawler", "pass")
    ctl.pools.secrets[taken] = {"metadata": {"name": taken, "uid": "x"}}
    ctl.informer.apply_event("MODIFIED", auth_pool())
    tick(ctl)
    assert ctl.pools.created == []
    assert [m for _r, m in said] == [
        "members not changed: Secret ns/%s exists and is not this pool's: no member is made" % taken
    ]
