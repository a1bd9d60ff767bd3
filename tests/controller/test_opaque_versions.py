"""resourceVersions are opaque: compared for equality only, ordered by the watch (issue 38).

The Kubernetes API defines a resourceVersion as an opaque string: neither numeric nor growing. The
own-write expectations (kube/own_writes.py) and the informer's cache must give the same answers
whatever the strings look like: after our write of version X a key is behind until the watch
delivers X (or the object goes, or is replaced, or a relist made after the write brings it).
"""

from __future__ import annotations

import pytest
from egress_proxies_controller.kube import informer as informer_mod
from egress_proxies_controller.kube.object_ids import resource_version
from egress_proxies_controller.kube.own_writes import OwnWrites

from .fake_cluster import proxy_object

KEY = "ns/p1"

#: (a version the cache holds, our write's, a later one): none ordered as numbers say
SEQUENCES = [("a9", "b", "a10"), ("9", "10", "8"), ("10", "9", "11"), ("Zm9v", "YmFy", "cXV4")]


def version(rv: str, uid: str = "uid-1") -> dict:
    obj = proxy_object(uid=uid)
    obj["metadata"]["resourceVersion"] = rv
    return obj


def informer(queued: list) -> informer_mod.Informer:
    return informer_mod.Informer(None, None, queued.append, lister=lambda *a, **kw: None)


@pytest.mark.parametrize(("cached", "ours", "later"), SEQUENCES)
def test_behind_until_the_watch_delivers_our_write_whatever_the_strings(cached, ours, later):
    queued = []
    inf = informer(queued)
    inf.apply_event("ADDED", version(cached))
    inf.own_writes.wrote(version(ours))
    assert inf.snapshot(KEY) is informer_mod.BEHIND
    assert inf.own_writes.is_own(version(ours)) and not inf.own_writes.is_own(version(cached))
    queued.clear()
    inf.apply_event("MODIFIED", version(ours))
    assert queued == [KEY]  # caught up: the waiting key is queued again
    assert inf.snapshot(KEY)["metadata"]["resourceVersion"] == ours
    queued.clear()
    inf.apply_event("MODIFIED", version(later))  # after ours in the watch's order: newer
    assert inf.snapshot(KEY)["metadata"]["resourceVersion"] == later
    assert not inf.own_writes.is_own(version(later))


@pytest.mark.parametrize(("cached", "ours", "later"), SEQUENCES)
def test_an_event_before_our_write_in_the_watch_keeps_the_key_waiting(cached, ours, later):
    """``later`` arrives before ``ours`` here: the watch's order makes it older than our write."""
    queued = []
    inf = informer(queued)
    inf.apply_event("ADDED", version(cached))
    inf.own_writes.wrote(version(ours))
    assert inf.snapshot(KEY) is informer_mod.BEHIND
    inf.apply_event("MODIFIED", version(later))
    assert inf.snapshot(KEY) is informer_mod.BEHIND
    inf.apply_event("MODIFIED", version(ours))
    assert inf.snapshot(KEY)["metadata"]["resourceVersion"] == ours


def test_a_non_numeric_cached_version_is_not_version_zero():
    """main read "a9" as 0 and "b" as 0: a write of "b" over a cached "a9" was never behind."""
    assert resource_version(version("a9")) == "a9" and resource_version(version("")) == ""
    writes = OwnWrites()
    writes.wrote(version("b"))
    assert writes.behind(KEY, version("a9"))
    assert not writes.behind(KEY, version("b"))
    assert not writes.behind(KEY, version("a9", uid="uid-2"))  # another object: never behind


def test_a_relist_begun_after_our_write_brings_the_key_up_to_date():
    """A list made after our write was answered is never older than it, whatever it holds."""
    writes = OwnWrites()
    writes.wrote(version("x7"))
    started = writes.list_started()
    assert writes.behind(KEY, version("x1"))
    assert writes.seen(KEY, version("q"), listed_after=started)
    assert not writes.behind(KEY, version("q"))


def test_a_write_answered_during_a_relist_waits_for_its_watch_event():
    """The list may be older than the write: the watch from the list's version delivers it."""
    writes = OwnWrites()
    started = writes.list_started()
    writes.wrote(version("x7"))
    assert writes.behind(KEY, version("x1"))
    assert not writes.seen(KEY, version("x1"), listed_after=started)
    assert writes.behind(KEY, version("x1"))
    assert writes.seen(KEY, version("x7"))


def test_a_create_not_yet_delivered_is_behind_and_its_deletion_releases_it():
    """A write of an object the cache never held (a create): behind until its ADDED event."""
    writes = OwnWrites()
    writes.wrote(version("c1"))
    assert writes.behind(KEY, None)
    assert writes.seen(KEY, None)  # gone before it was seen: nothing to wait for
    assert not writes.behind(KEY, None)


def test_a_write_whose_event_came_before_its_answer_was_recorded_is_not_waited_for():
    """The watch runs on its own thread: X (ours) then Y (someone else's) may both be in the
    cache before our answer of X is recorded. Y is newer: the key is not behind."""
    queued = []
    inf = informer(queued)
    inf.apply_event("ADDED", version("a"))
    inf.apply_event("MODIFIED", version("x"))
    inf.apply_event("MODIFIED", version("y"))
    inf.own_writes.wrote(version("x"))
    assert inf.snapshot(KEY)["metadata"]["resourceVersion"] == "y"
