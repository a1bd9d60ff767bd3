"""The informer's cache never goes back in time (issue 14).

The manager stores what it wrote itself; a watch event still in flight for an older version must
not replace it (the next plan would decide from a status that no longer exists). A new object
under the same name (another UID) always replaces the old one.
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


def test_an_older_watch_event_does_not_overwrite_what_we_wrote(monkeypatch):
    inf = watch_events(monkeypatch, [{"type": "MODIFIED", "object": version("9", providerID="")}])
    inf.store(version("10", providerID="local/proxy-x"))
    inf._watch_from("8")
    assert inf.get("ns/p1")["status"]["providerID"] == "local/proxy-x"


def test_a_newer_event_or_another_uid_replaces_the_cached_object(monkeypatch):
    inf = watch_events(
        monkeypatch,
        [
            {"type": "MODIFIED", "object": version("11", providerID="a")},
            {"type": "ADDED", "object": version("5", uid="uid-2", providerID="")},
        ],
    )
    inf.store(version("10", providerID="local/proxy-x"))
    inf._watch_from("8")
    assert inf.get("ns/p1")["metadata"]["uid"] == "uid-2"


def test_the_answer_to_the_last_finalizer_removal_leaves_no_ghost(monkeypatch):
    """The patch that removes the last finalizer answers with the object as it was just before
    the API server deleted it; its DELETED event can arrive first. Storing that answer kept a
    ghost in the cache for good (a pool counted it as a member and never finished deleting)."""
    final = version("12")
    final["metadata"].update(deletionTimestamp="2026-12-01T10:00:00Z", finalizers=[])
    inf = watch_events(monkeypatch, [{"type": "DELETED", "object": version("12")}])
    inf.store(version("11"))
    inf._watch_from("10")
    inf.store(final)
    assert inf.get("ns/p1") is None
    inf.store(version("13", uid="uid-2"))  # a new object of that name is cached as usual
    assert inf.get("ns/p1")["metadata"]["uid"] == "uid-2"
