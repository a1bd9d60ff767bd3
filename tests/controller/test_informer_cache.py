"""The informer's cache never goes back in time (issues 14, 30 and 38).

The watch starts at the list's version and resumes after the last event applied, so each event
it delivers is newer than the cached object by the watch's order: it replaces it, whatever its
opaque resourceVersion looks like; a new object under the same name (another UID) too. The controller's own
writes never enter the cache: a reconcile that reads a version older than our last write is told
``BEHIND`` and waits for the watch.
"""

from __future__ import annotations

from egress_proxies_controller.kube import informer as informer_mod

from .fake_cluster import proxy_object


def version(rv: str, uid: str = "uid-1", **status) -> dict:
    obj = proxy_object(uid=uid)
    obj["metadata"]["resourceVersion"] = rv
    obj["status"] = status
    return obj


class FakeWatch:
    events: list = []

    def stream(self, *_a, **_kw):
        yield from self.events

    def stop(self):
        pass


def watch_events(monkeypatch, events) -> informer_mod.Informer:
    FakeWatch.events = events
    monkeypatch.setattr(informer_mod.watch, "Watch", FakeWatch)
    return informer_mod.Informer(
        kube=type("K", (), {"list_proxies": None})(), namespace=None, on_change=lambda k: None
    )


def test_a_watch_event_replaces_the_cache_by_the_watchs_order_not_by_its_number(monkeypatch):
    """resourceVersions are opaque: "9" after "10" is the later one when the watch says so."""
    inf = watch_events(monkeypatch, [{"type": "MODIFIED", "object": version("9", providerID="b")}])
    inf.apply_event("MODIFIED", version("10", providerID="local/proxy-x"))
    inf._watch_from("10")
    assert inf.get("ns/p1")["status"]["providerID"] == "b"


def test_a_newer_event_or_another_uid_replaces_the_cached_object(monkeypatch):
    inf = watch_events(
        monkeypatch,
        [
            {"type": "MODIFIED", "object": version("11", providerID="a")},
            {"type": "ADDED", "object": version("5", uid="uid-2", providerID="")},
        ],
    )
    inf.apply_event("MODIFIED", version("10", providerID="local/proxy-x"))
    inf._watch_from("8")
    assert inf.get("ns/p1")["metadata"]["uid"] == "uid-2"


def test_the_answer_to_the_last_finalizer_removal_is_awaited_not_cached(monkeypatch):
    """The patch that removes the last finalizer answers with the object as it was just before
    the API server deleted it. It is not cached (that kept a ghost a pool counted as a member);
    until the DELETED event arrives the key's reconcile is told BEHIND, then it finds it gone."""
    final = version("12")
    final["metadata"].update(deletionTimestamp="2026-12-01T10:00:00Z", finalizers=[])
    queued = []
    inf = watch_events(monkeypatch, [{"type": "DELETED", "object": version("12")}])
    inf.on_change = queued.append
    inf.apply_event("MODIFIED", version("11"))
    inf.own_writes.wrote(final)
    assert inf.get("ns/p1")["metadata"]["resourceVersion"] == "11"
    assert inf.snapshot("ns/p1") is informer_mod.BEHIND
    queued.clear()
    inf._watch_from("11")
    assert queued == ["ns/p1"] and inf.snapshot("ns/p1") is None
    inf.apply_event("ADDED", version("13", uid="uid-2"))  # a new object of that name is cached as usual
    assert inf.snapshot("ns/p1")["metadata"]["uid"] == "uid-2"
