"""A write that meets a newer object raises ``Conflict`` and the key is planned again (issue 38).

The client never re-reads nor retries: the reconcile wrote with its snapshot's resourceVersion,
and the next reconcile decides from the newer object its watch delivers (docs/architecture.md:
"a conflict plans the key again"). The real ``Kube`` runs here over a recording stand-in of the
client's API objects, which answers every write with 409 and counts every call.
"""

from __future__ import annotations

import pytest
from egress_proxies_controller import api
from egress_proxies_controller.kube.client import ApiException, Conflict, Kube, client

from .fake_cluster import FakeExecutor, FakeInformer, FakeKube, proxy_object
from .test_manager_snapshots import KEY, manager, running

WRITES = ("patch_namespaced_custom_object", "replace_namespaced_custom_object_status")


class RecordingApi:
    """Every API call by name; writes answer 409, reads the stored object."""

    def __init__(self, stored: dict):
        self.stored, self.calls = stored, []

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls.append(name)
            if name in WRITES:
                raise ApiException(status=409, reason="Conflict")
            if name.startswith("get_"):
                return dict(self.stored)
            return None

        return call


def recording_kube(stored: dict) -> tuple:
    kube = Kube(client.ApiClient())
    kube.custom = kube.core = RecordingApi(stored)
    return kube, kube.custom


def without_finalizer() -> dict:
    obj = proxy_object()
    obj["metadata"]["finalizers"] = []
    return obj


@pytest.mark.parametrize("present", [True, False])
def test_a_finalizer_patch_that_meets_a_409_raises_conflict_without_a_get(present):
    obj = proxy_object() if not present else without_finalizer()
    kube, recorded = recording_kube(obj)
    with pytest.raises(Conflict):
        kube.set_finalizer(obj, present)
    assert recorded.calls == ["patch_namespaced_custom_object"]


def test_a_status_write_that_meets_a_409_raises_conflict_without_a_get():
    obj = proxy_object()
    kube, recorded = recording_kube(obj)
    with pytest.raises(Conflict):
        kube.write_status(obj, {"state": "Running"})
    assert recorded.calls == ["replace_namespaced_custom_object_status"]


def test_a_finalizer_conflict_in_a_reconcile_requeues_the_key_and_reads_nothing(providers_file):
    """The Proxy controller with the real client: its finalizer patch meets 409, the key is
    queued again at once (no back-off), and the only API call made was that patch."""
    cache = FakeKube()
    cache.put(without_finalizer())
    kube, recorded = recording_kube(cache.get(KEY))
    executor = FakeExecutor(running)
    m = manager(kube, executor, providers_file, FakeInformer(cache))
    m.process(m.queue.pop_due(100, 0))
    assert m.drain(30)
    assert recorded.calls == ["patch_namespaced_custom_object"]
    assert executor.calls == []  # nothing was run for a plan whose write failed
    assert m.queue.pop_due(100, 0) == [KEY]  # planned again, from the snapshot the watch brings
    assert api.FINALIZER not in (cache.get(KEY)["metadata"].get("finalizers") or [])
