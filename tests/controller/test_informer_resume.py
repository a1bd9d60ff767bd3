"""A watch broken midway resumes after the last event it applied, as client-go's reflector does:
from where it began (what the informer did before) it would replay every event since, a deleted
object's earlier ones first, which the fault matrix's link cells met as a Proxy come back live
(test_informer_late_events.py has that on the real API server)."""

from __future__ import annotations

from egress_proxies_controller.kube import informer as informer_mod


def proxy_event(kind: str, rv: int, name: str = "p1") -> dict:
    meta = {"namespace": "ns", "name": name, "uid": "uid-" + name, "resourceVersion": str(rv)}
    return {"type": kind, "object": {"metadata": meta, "spec": {"provider": "local"}}}


class Streams:
    """Stands in for the client's ``Watch``: each ``stream`` call records the version it was
    asked to start from and yields its script; an exception in the script is raised there."""

    def __init__(self, informer, scripts: list):
        self.informer, self.scripts, self.started_from = informer, scripts, []

    def __call__(self):
        return self

    def stream(self, _lister, _namespace, resource_version=None, **_kwargs):
        self.started_from.append(resource_version)
        if not self.scripts:
            self.informer._stop.set()
            return
        for step in self.scripts.pop(0):
            if isinstance(step, Exception):
                raise step
            yield step

    def stop(self):
        pass


def test_a_broken_watch_resumes_after_the_last_event_it_applied(monkeypatch):
    inf = informer_mod.Informer(None, "ns", on_change=lambda key: None, lister=lambda *a, **kw: None)
    monkeypatch.setattr(inf, "_list", lambda: "10")
    monkeypatch.setattr(inf._stop, "wait", lambda _seconds: False)
    streams = Streams(
        inf,
        [
            [proxy_event("ADDED", 11), proxy_event("MODIFIED", 12), ConnectionResetError("link cut")],
            [
                proxy_event("DELETED", 13),
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}},
            ],
        ],
    )
    monkeypatch.setattr(informer_mod.watch, "Watch", streams)
    inf.run()
    assert streams.started_from == ["10", "12", "20"]
    assert inf.get("ns/p1") is None


def test_an_event_of_a_deleted_uid_is_dropped_and_a_new_object_of_the_name_is_not():
    inf = informer_mod.Informer(None, "ns", on_change=lambda key: None, lister=lambda *a, **kw: None)
    inf.apply_event("ADDED", proxy_event("ADDED", 11)["object"])
    inf.apply_event("DELETED", proxy_event("DELETED", 13)["object"])
    inf.apply_event("MODIFIED", proxy_event("MODIFIED", 12)["object"])  # a replay
    assert inf.get("ns/p1") is None
    again = proxy_event("ADDED", 14)["object"]
    again["metadata"]["uid"] = "uid-p1-second"  # created again under the same name
    inf.apply_event("ADDED", again)
    assert inf.get("ns/p1")["metadata"]["uid"] == "uid-p1-second"
