"""The manager applies an answer only to the object it was planned for (issue 14).

Runs the real ProxyController, WorkQueue and Reconciler over the in-memory API of fake_cluster.py:
objects are edited, replaced or made stale "while the run goes on", and the tests check what
was written and what is planned next.
"""

from __future__ import annotations

import base64
import os

import pytest
from egress_proxies_controller import api
from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.kube import informer as informer_mod
from egress_proxies_controller.kube.client import Kube
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.reconciler import Answer, Settings
from egress_proxies_controller.proxy.spec import ProxySpec

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.names import name_from_uid

from .fake_cluster import FakeExecutor, FakeInformer, FakeKube, proxy_object

KEY = "ns/p1"


def running(key, action, fields):
    if action.op == "delete":
        return Answer(ok=True, instance={"id": action.provider_id, "state": "absent"})
    return Answer(
        ok=True,
        instance={
            "id": "local/" + action.name,
            "name": action.name,
            "uid": action.uid,
            "state": "Running",
            "ip": "127.77.0.1",
        },
    )


def manager(kube, executor, providers_file, informer=None) -> ProxyController:
    queue = WorkQueue(0.01, 0.02)
    private = os.path.join(os.path.dirname(providers_file), "private")
    config = ProvidersConfig(providers_file, private, lambda _path, _names: [])
    m = ProxyController(kube, informer or FakeInformer(kube), queue, executor, Settings(), config)
    m.reload_config()
    return m


def tick(m: ProxyController) -> list:
    """One round of the workers: the keys due now reconciled, their calls run. The answers wait
    in the mailbox, their keys queued: the next round applies them."""
    keys = m.queue.pop_due(100, 0)
    m.process(keys)
    assert m.drain(30)
    return keys


def applied(m: ProxyController) -> list:
    """A round, then the reconcile of each answer it brought back."""
    keys = tick(m)
    m.process(m.queue.pop_due(100, 0))
    assert m.drain(30)
    return keys


def test_spec_edit_during_a_create_records_the_planned_spec_then_replaces(providers_file):
    kube = FakeKube()
    planned = kube.put(proxy_object())
    executor = FakeExecutor(running, during=lambda: kube.put(proxy_object(port=8080)))
    m = manager(kube, executor, providers_file)
    assert tick(m) == [KEY]  # the create ran while the spec changed: its answer waits
    assert not kube.get(KEY).get("status")
    executor.during = None
    assert tick(m) == [KEY]  # the answer recorded on generation 2, then requeued at once
    status = kube.get(KEY)["status"]
    assert status["specHash"] == ProxySpec.from_object(planned).hash()
    assert status["observedGeneration"] == 1 and status["providerID"]
    assert tick(m) == [KEY]  # re-planned at once from generation 2
    assert len(executor.calls) == 2  # one create, then the replacement's delete
    last = executor.calls[-1][KEY]
    assert (last.op, last.phase, last.generation) == ("delete", "replace", 2)


def test_answer_for_a_proxy_recreated_under_the_same_name_is_dropped(providers_file):
    kube = FakeKube()
    kube.put(proxy_object())

    def recreate():
        del kube.objects[KEY]
        kube.put(proxy_object(uid="uid-2"))

    executor = FakeExecutor(running, during=recreate)
    m = manager(kube, executor, providers_file)
    tick(m)
    assert not (kube.get(KEY).get("status") or {}).get("providerID")  # not the old object's instance
    executor.during = None
    tick(m)
    create = executor.calls[-1][KEY]
    assert (create.op, create.uid, create.name) == ("create", "uid-2", name_from_uid("uid-2"))


def test_no_follow_up_is_taken_from_memory_for_a_new_object_of_the_same_name(providers_file):
    kube = FakeKube()
    old = proxy_object()
    old["status"] = {"providerID": "local/old", "specHash": "old", "state": "Running", "provider": "local"}
    kube.put(old)

    def still_there(key, action, fields):
        return Answer(ok=True, instance={"id": action.provider_id, "uid": action.uid, "state": "Running"})

    executor = FakeExecutor(still_there)
    m = manager(kube, executor, providers_file)
    tick(m)
    del kube.objects[KEY]
    kube.put(proxy_object(uid="uid-2"))
    m.queue.add(KEY)
    tick(m)
    nxt = executor.calls[-1][KEY]
    assert (nxt.op, nxt.uid, nxt.provider_id) == ("create", "uid-2", "")


class StaleInformer(FakeInformer):
    """Serves the object as it was before the test's last edit (a cache behind the API)."""

    def __init__(self, kube, stale):
        super().__init__(kube)
        self.stale = stale

    def get(self, key):
        return self.stale.pop(key, None) or super().get(key)


def test_a_conflict_on_the_plans_write_replans_instead_of_acting(providers_file):
    kube = FakeKube()
    latched = proxy_object()
    latched["status"] = {
        "conditions": [
            {
                "type": api.COND_PERMANENT,
                "status": "True",
                "reason": api.REASON_PROVIDER_NOT_CONFIGURED,
                "message": "x",
                "observedGeneration": 1,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    stale = kube.put(latched)
    kube.put(dict(latched, metadata=dict(latched["metadata"], annotations={"note": "edited"})))
    executor = FakeExecutor(running)
    informer = StaleInformer(kube, {})
    m = manager(kube, executor, providers_file, informer)
    informer.stale[KEY] = stale  # what the next reconcile reads
    tick(m)
    assert executor.calls == []  # nothing done from a plan whose write met a newer object
    assert tick(m) == [KEY]  # planned again at once, from the current object
    assert executor.calls[-1][KEY].op == "create"


def test_a_secret_that_cannot_be_read_fails_only_its_proxy(providers_file):
    import urllib3

    kube = FakeKube()
    kube.put(proxy_object(cloudInit={"secretRef": {"name": "ci", "key": "user-data"}}))
    kube.put(proxy_object(name="p2", uid="uid-2"))
    kube.secrets[("ns", "ci")] = {
        "user-data": urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out")
    }
    executor = FakeExecutor(running)
    m = manager(kube, executor, providers_file)
    applied(m)
    assert kube.get("ns/p2")["status"]["providerID"]
    ready = next(c for c in kube.get(KEY)["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "Retrying" and "ci" in ready["message"]


class WatchedKube(FakeKube):
    """Records every API read made while a run is in flight (``running`` set by the executor)."""

    def __init__(self):
        super().__init__()
        self.running = False
        self.reads_in_run = []

    def secret_value(self, namespace, name, key):
        if self.running:
            self.reads_in_run.append(("secret", name))
        return super().secret_value(namespace, name, key)

    def get_proxy(self, namespace, name):
        if self.running:
            self.reads_in_run.append(("proxy", name))
        return super().get_proxy(namespace, name)


class InlineTrimmingInformer(FakeInformer):
    """The cache as the real informer keeps it: inline cloud-init as its digest only."""

    def get(self, key):
        obj = super().get(key)
        return None if obj is None else informer_mod.trimmed(obj)


class RunMarkingExecutor(FakeExecutor):
    def __init__(self, kube: WatchedKube):
        super().__init__(running)
        self.kube = kube
        self.fields = []

    def execute(self, actions, create_fields, on_answer=None):
        self.kube.running = True
        try:
            self.fields.append(dict(create_fields))
            return super().execute(actions, create_fields)
        finally:
            self.kube.running = False


def test_a_run_gets_every_create_field_before_it_starts_and_reads_nothing_while_it_runs(providers_file):
    """The executor never calls back into the controller mid-run (issue 30): the cloud-init
    Secret and the inline text (the cache keeps only its digest) are read before the run."""
    kube = WatchedKube()
    kube.put(proxy_object(cloudInit={"secretRef": {"name": "ci", "key": "user-data"}}))
    kube.put(proxy_object(name="p2", uid="uid-2", cloudInit={"inline": "#cloud-config\n"}))
    kube.put(proxy_object(name="p3", uid="uid-3", cloudInit={"secretRef": {"name": "gone", "key": "k"}}))
    kube.secrets[("ns", "ci")] = {"user-data": b"#cloud-config\nruncmd: []\n"}
    executor = RunMarkingExecutor(kube)
    m = manager(kube, executor, providers_file, InlineTrimmingInformer(kube))
    applied(m)
    assert kube.reads_in_run == []
    (fields,) = executor.fields
    assert fields[KEY]["cloud_init"] == "#cloud-config\nruncmd: []\n"
    assert fields["ns/p2"]["cloud_init"] == "#cloud-config\n"
    assert isinstance(fields["ns/p3"], LookupError)  # that item alone fails, before the run
    assert kube.get("ns/p2")["status"]["providerID"] and not kube.get("ns/p3")["status"].get("providerID")


class SecretsApi:
    def __init__(self, data: bytes):
        self.data = data

    def read_namespaced_secret(self, name, namespace, **_kw):
        class Secret:
            pass

        secret = Secret()
        secret.data = {"user-data": base64.b64encode(self.data).decode()}
        return secret


def test_non_utf8_user_data_is_a_readable_per_item_error():
    import gzip

    kube = Kube.__new__(Kube)
    kube.core, kube.timeout = SecretsApi(gzip.compress(b"#cloud-config\n")), 1
    with pytest.raises(LookupError, match="not UTF-8"):
        kube.secret_value("ns", "ci", "user-data")


def test_a_provider_removed_under_proxies_with_instances_is_reported_once(providers_file):
    kube = FakeKube()
    made = proxy_object()
    made["status"] = {"providerID": "local/proxy-x", "provider": "local", "specHash": "h", "state": "Running"}
    kube.put(made)
    kube.put(proxy_object(name="fresh", uid="uid-2"))  # no instance: nothing to report for it
    reports = []
    m = manager(kube, FakeExecutor(running), providers_file)
    m.report_missing = reports.append
    with open(providers_file, "w") as handle:
        handle.write("providers:\n  - {name: other, type: local}\n")
    m.reload_config()
    m.reload_config()  # unchanged: not reported again
    assert reports == [{"local": 1}]
    assert kube.status_writes == [] and kube.events == []  # no Proxy is written or told


class FailingExecutor:
    def execute(self, actions, create_fields, on_answer=None):
        raise RuntimeError("the runner blew up")


def test_a_failed_run_backs_off_only_the_keys_it_held(providers_file):
    """p1 is finished at plan time (latched: no call); p2's run fails as a whole. Only p2 backs
    off: p1 may already be in another batch, and its backoff must not grow for someone else's
    failure."""
    kube = FakeKube()
    latched = proxy_object(provider="nowhere")  # ProviderNotConfigured: planned, no call
    kube.put(latched)
    kube.put(proxy_object(name="p2", uid="uid-2"))
    m = manager(kube, FailingExecutor(), providers_file)
    tick(m)
    assert m.queue.failures("ns/p2") == 1
    assert m.queue.failures(KEY) == 0
    assert not m.busy()  # nothing left in flight or in the mailbox


def test_creates_ask_for_an_owner_reference_to_their_proxy(providers_file):
    """The modules set an OwnerReference only when asked (issue 15); the controller asks, for
    the Proxy the create was planned from."""
    kube = FakeKube()
    kube.put(proxy_object())
    seen = {}

    def record(key, action, fields):
        if action.op == "create":
            seen.update(fields)
        return running(key, action, fields)

    m = manager(kube, FakeExecutor(record), providers_file)
    tick(m)
    assert seen["owner_reference"] is True
    assert (seen["namespace"], seen["proxy_name"]) == tuple(KEY.split("/"))


def test_a_conflict_on_the_answers_write_drops_it_and_the_next_reconcile_plans_afresh(providers_file):
    """Issue 38: the create's answer meets a newer object (409) at its status write: it is not
    kept for later (nothing outlives a reconcile but what the object carries); the key is
    requeued and its next reconcile plans afresh from the object it reads: the create again,
    which the modules answer with the same instance (idempotent by uid; proven on a real
    provider in test_conflict_after_create.py)."""
    kube = FakeKube()
    kube.put(proxy_object())
    informer = StaleInformer(kube, {})

    def edited_meanwhile():  # the answer's reconcile reads the version before this edit
        informer.stale[KEY] = obj = kube.get(KEY)
        kube.put(dict(obj, metadata=dict(obj["metadata"], annotations={"note": "edited"})))

    executor = FakeExecutor(running, during=edited_meanwhile)
    m = manager(kube, executor, providers_file, informer)
    tick(m)
    assert len(m.answers) == 1 and m.queue.pop_due(100, 0) == [KEY]  # the answer's event
    m.process([KEY])  # reads the stale version: its write meets the edit (409)
    assert not (kube.get(KEY).get("status") or {}).get("providerID")
    assert len(m.answers) == 0  # dropped, not filed
    executor.during = None
    assert applied(m) == [KEY]  # requeued at once, planned afresh: the create again
    status = kube.get(KEY)["status"]
    assert status["providerID"] == "local/" + name_from_uid("uid-1") and status["state"] == "Running"
    creates = [call[KEY] for call in executor.calls]
    assert [(a.op, a.uid, a.name) for a in creates] == [("create", "uid-1", name_from_uid("uid-1"))] * 2


def test_an_answer_delivered_for_an_object_recreated_under_its_name_is_dropped(providers_file):
    """The mailbox gives an answer only to the object (uid) its call was about."""
    kube = FakeKube()
    kube.put(proxy_object())

    def edited_meanwhile():
        obj = kube.get(KEY)
        kube.put(dict(obj, metadata=dict(obj["metadata"], annotations={"note": "edited"})))

    executor = FakeExecutor(running, during=edited_meanwhile)
    m = manager(kube, executor, providers_file)
    tick(m)
    del kube.objects[KEY]
    kube.put(proxy_object(uid="uid-2"))
    executor.during = None
    tick(m)
    recorded = (kube.get(KEY).get("status") or {}).get("providerID")
    assert recorded != "local/" + name_from_uid("uid-1")  # never the old object's instance
    nxt = executor.calls[-1][KEY]
    assert (nxt.op, nxt.uid) == ("create", "uid-2")  # planned afresh for the new object
