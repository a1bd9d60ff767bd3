"""Table tests of the reconciler: every row of blueprint §3 and every branch of §1-§2.

The reconciler is pure, so each test builds a Proxy object, asks for a plan or applies an
answer, and checks the step: the provider call, the status written, finalizer, requeue, backoff.
"""

from __future__ import annotations

import copy

import pytest
from egress_proxies_controller import api
from egress_proxies_controller.proxy.reconciler import (
    CREATE,
    DELETE,
    GET,
    PHASE_CREATE,
    PHASE_FINAL,
    PHASE_POLL,
    PHASE_RECYCLE,
    PHASE_REPLACE,
    Action,
    Answer,
    Proxy,
    Reconciler,
    Settings,
)
from egress_proxies_controller.proxy.spec import ProxySpec

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.names import name_from_uid

SETTINGS = Settings(provisioning_poll=10, deletion_poll=11, requeue_now=1, quota_retry=300, running_poll=60)
UID = "2f6c1c0e-0000-4000-8000-000000000001"
NOW = "2026-11-29T10:00:00Z"


def obj(**changes) -> dict:
    base = {
        "metadata": {
            "namespace": "ns",
            "name": "p1",
            "uid": UID,
            "generation": 1,
            "finalizers": [api.FINALIZER],
            "annotations": {},
        },
        "spec": {"provider": "local", "port": 3128},
        "status": {},
    }
    for path, value in changes.items():
        target = base
        parts = path.split("__")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = value
    return base


def proxy(**changes) -> Proxy:
    return Proxy.from_object(obj(**changes))


def running_status(p: Proxy, **extra) -> dict:
    status = {
        "providerID": "local/" + name_from_uid(UID),
        "specHash": p.spec.hash(),
        "state": "Running",
        "ip": "127.77.0.1",
        "observedGeneration": 1,
    }
    status.update(extra)
    return status


@pytest.fixture
def r() -> Reconciler:
    return Reconciler(SETTINGS, ["local", "other"], now=lambda: NOW)


def cond(status: dict, cond_type: str) -> dict:
    return next(c for c in status["conditions"] if c["type"] == cond_type)


def instance(state="Provisioning", ip="") -> dict:
    return {
        "id": "local/" + name_from_uid(UID),
        "name": name_from_uid(UID),
        "uid": UID,
        "state": state,
        "ip": ip,
    }


# -- plan ---------------------------------------------------------------------------------


def test_new_proxy_gets_the_finalizer_and_a_create(r):
    step = r.plan(proxy(metadata__finalizers=[]))
    assert step.add_finalizer
    assert step.action == Action(
        CREATE, PHASE_CREATE, "local", "", name_from_uid(UID), UID, 1, step.action.spec_hash
    )
    assert step.status is None  # no providerID before create returned one


def test_proxy_with_id_and_same_spec_is_polled(r):
    p = proxy()
    p = proxy(status=running_status(p))
    step = r.plan(p)
    assert not step.add_finalizer
    assert (step.action.op, step.action.phase, step.action.provider_id) == (
        GET,
        PHASE_POLL,
        p.status["providerID"],
    )


def test_spec_change_starts_a_replacement(r):
    p = proxy()
    p = proxy(status=running_status(p, specHash="0000"))
    step = r.plan(p)
    assert (step.action.op, step.action.phase) == (DELETE, PHASE_REPLACE)


@pytest.mark.parametrize("state", ["Stopped", "Terminated"])
def test_stopped_or_terminated_is_deleted_then_recreated(r, state):
    p = proxy()
    p = proxy(status=running_status(p, state=state, ip=""))
    step = r.plan(p)
    assert (step.action.op, step.action.phase) == (DELETE, PHASE_RECYCLE)


def test_unconfigured_provider_latches_without_any_call(r):
    step = r.plan(proxy(spec__provider="missing"))
    assert step.action is None
    assert cond(step.status, api.COND_PERMANENT)["status"] == "True"
    assert cond(step.status, api.COND_PERMANENT)["reason"] == api.REASON_PROVIDER_NOT_CONFIGURED
    assert "missing" in cond(step.status, api.COND_READY)["message"]
    # issue 37: the Reason column (Ready's reason) says why, not only PermanentError
    assert cond(step.status, api.COND_READY)["reason"] == api.REASON_PROVIDER_NOT_CONFIGURED
    assert step.requeue_after is None and not step.backoff


def test_latched_proxy_makes_no_call_until_the_generation_changes(r):
    latched = r._latch(proxy(), r.plan(proxy()), "CreateFailed", "image not in catalogue", 1).status
    step = r.plan(proxy(status=latched))
    assert step.action is None and step.status is None and step.requeue_after is None
    step = r.plan(proxy(status=latched, metadata__generation=2))
    assert step.action is not None and step.action.op == CREATE
    assert cond(step.status, api.COND_PERMANENT)["status"] == "False"


def test_provider_not_configured_latch_is_released_when_the_provider_appears(r):
    latched = r.plan(proxy(spec__provider="late")).status
    assert r.plan(proxy(spec__provider="late", status=latched)).action is None
    later = Reconciler(SETTINGS, ["local", "late"], now=lambda: NOW)
    step = later.plan(proxy(spec__provider="late", status=latched))
    assert step.action is not None and step.action.op == CREATE
    assert cond(step.status, api.COND_PERMANENT)["status"] == "False"


def test_other_permanent_latch_is_not_released_by_another_providers_config(r):
    latched = r._latch(proxy(), r.plan(proxy()), "CreateFailed", "bad image", 1).status
    later = Reconciler(SETTINGS, ["local", "x"], changed_at={"x": 1e12}, epochs={"x": 1})
    assert later.plan(proxy(status=latched)).action is None


# -- create -------------------------------------------------------------------------------


def test_create_records_the_id_only_from_the_answer(r):
    p = proxy()
    action = r.plan(p).action
    step = r.apply(p, action, Answer(ok=True, instance=instance()))
    assert step.status["providerID"] == instance()["id"]
    assert step.status["specHash"] == p.spec.hash()
    assert step.status["state"] == "Provisioning"
    assert cond(step.status, api.COND_READY)["status"] == "False"
    assert step.requeue_after == SETTINGS.requeue_now
    assert step.events[0][:2] == ("Normal", "Created")


def test_create_running_is_ready_with_its_ip(r):
    p = proxy()
    step = r.apply(p, r.plan(p).action, Answer(ok=True, instance=instance("Running", "127.77.0.9")))
    assert step.status["ip"] == "127.77.0.9"
    assert cond(step.status, api.COND_READY)["status"] == "True"
    assert step.requeue_after == SETTINGS.running_poll


def test_quota_sets_the_condition_and_retries_later_without_backoff(r):
    p = proxy()
    step = r.apply(p, r.plan(p).action, Answer(ok=False, error_class="quota_exceeded", message="CPUS quota"))
    assert cond(step.status, api.COND_QUOTA)["status"] == "True"
    assert "CPUS quota" in cond(step.status, api.COND_QUOTA)["message"]
    assert step.requeue_after == SETTINGS.quota_retry and not step.backoff
    assert "providerID" not in step.status


def test_permanent_create_failure_is_latched(r):
    p = proxy()
    step = r.apply(p, r.plan(p).action, Answer(ok=False, error_class="permanent", message="no such image"))
    assert cond(step.status, api.COND_PERMANENT)["status"] == "True"
    assert cond(step.status, api.COND_PERMANENT)["observedGeneration"] == 1
    assert step.requeue_after is None and not step.backoff
    assert r.plan(proxy(status=step.status)).action is None


@pytest.mark.parametrize("error_class", ["transient", "not_found", ""])
def test_other_create_failures_back_off(r, error_class):
    p = proxy()
    step = r.apply(p, r.plan(p).action, Answer(ok=False, error_class=error_class, message="unreachable"))
    assert step.backoff and step.requeue_after is None
    assert "providerID" not in step.status
    assert cond(step.status, api.COND_READY)["reason"] == "Retrying"


# -- poll ---------------------------------------------------------------------------------


def polled(r, answer, **status):
    p = proxy()
    p = proxy(status=running_status(p, **status))
    return p, r.apply(p, r.plan(p).action, answer)


def test_poll_running_writes_ip_and_ready(r):
    _p, step = polled(
        r, Answer(ok=True, instance=instance("Running", "127.77.0.2")), state="Provisioning", ip=""
    )
    assert step.status["ip"] == "127.77.0.2"
    assert cond(step.status, api.COND_READY)["status"] == "True"
    assert step.events[0][:2] == ("Normal", "Ready")
    assert step.requeue_after == SETTINGS.running_poll


def test_poll_provisioning_polls_again(r):
    _p, step = polled(r, Answer(ok=True, instance=instance("Provisioning")))
    assert step.status["ip"] == ""
    assert step.requeue_after == SETTINGS.provisioning_poll


@pytest.mark.parametrize("state", ["Stopped", "Terminated"])
def test_poll_stopped_records_it_and_requeues_now(r, state):
    _p, step = polled(r, Answer(ok=True, instance=instance(state)))
    assert step.status["state"] == state
    assert cond(step.status, api.COND_READY)["status"] == "False"
    assert step.requeue_after == SETTINGS.requeue_now
    assert r.plan(proxy(status=step.status)).action.phase == PHASE_RECYCLE


def test_poll_not_found_clears_the_id_and_creates_again(r):
    _p, step = polled(r, Answer(ok=False, error_class="not_found", message="gone"))
    assert step.status["providerID"] == ""
    assert step.requeue_after == SETTINGS.requeue_now
    assert r.plan(proxy(status=step.status)).action.op == CREATE


def test_poll_transient_keeps_the_id_and_backs_off(r):
    p, step = polled(r, Answer(ok=False, error_class="transient", message="timeout"))
    assert step.backoff
    assert step.status["providerID"] == p.status["providerID"]


def test_poll_quota_and_permanent(r):
    _p, quota = polled(r, Answer(ok=False, error_class="quota_exceeded", message="rate"))
    assert quota.requeue_after == SETTINGS.quota_retry and not quota.backoff
    _p, perm = polled(r, Answer(ok=False, error_class="permanent", message="forbidden"))
    assert cond(perm.status, api.COND_PERMANENT)["status"] == "True"


def test_unchanged_ready_keeps_its_transition_time(r):
    p = proxy()
    first = r.apply(p, r.plan(p).action, Answer(ok=True, instance=instance("Running", "127.77.0.1")))
    later = Reconciler(SETTINGS, ["local"], now=lambda: "2026-12-01T00:00:00Z")
    p2 = proxy(status=first.status)
    second = later.apply(
        p2, later.plan(p2).action, Answer(ok=True, instance=instance("Running", "127.77.0.1"))
    )
    assert cond(second.status, api.COND_READY)["lastTransitionTime"] == NOW
    assert second.status == first.status  # nothing to write: no status churn in steady state
    assert second.events == []


def test_recycle_clears_the_id_once_gone(r):
    p = proxy()
    p = proxy(status=running_status(p, state="Stopped", ip=""))
    action = r.plan(p).action
    gone = r.apply(p, action, Answer(ok=True, instance={"id": action.provider_id, "state": "absent"}))
    assert gone.status["providerID"] == "" and gone.requeue_after == SETTINGS.requeue_now
    still = r.apply(p, action, Answer(ok=True, instance=instance("Terminated")))
    assert still.status["providerID"] == action.provider_id  # kept until the provider says gone
    assert still.requeue_after == SETTINGS.deletion_poll
    failed = r.apply(p, action, Answer(ok=False, error_class="transient", message="x"))
    assert failed.backoff


# -- replacement ----------------------------------------------------------------------------


def test_replacement_deletes_waits_for_not_found_then_creates(r):
    p = proxy()
    p = proxy(status=running_status(p, specHash="old"))
    delete = r.plan(p).action
    assert (delete.op, delete.phase) == (DELETE, PHASE_REPLACE)
    step = r.apply(p, delete, Answer(ok=True, instance=instance("Terminated")))
    assert cond(step.status, api.COND_READY)["reason"] == "Replacing"
    assert step.requeue_after == SETTINGS.deletion_poll and step.status["providerID"]
    again = r.plan(proxy(status=step.status)).action
    assert (again.op, again.phase) == (DELETE, PHASE_REPLACE)  # planned again, not remembered
    gone = r.apply(p, delete, Answer(ok=True, instance={"id": delete.provider_id, "state": "absent"}))
    assert gone.status["providerID"] == "" and gone.requeue_after == SETTINGS.requeue_now
    create = r.plan(proxy(status=gone.status)).action
    assert create.op == CREATE and create.name == name_from_uid(UID)  # same name for the replacement


def test_replacement_recovers_from_a_crash_between_create_and_status_write(r):
    """Create ran for the new spec but status still names the old hash: the next plan reads the
    (same-named) instance, which create adopts idempotently after the delete/recreate cycle."""
    p = proxy()
    stale = proxy(status=running_status(p, specHash="old"))
    assert r.plan(stale).action.phase == PHASE_REPLACE


# -- deletion -------------------------------------------------------------------------------


def deleting(**changes) -> Proxy:
    p = proxy()
    base = {"metadata__deletionTimestamp": NOW, "status": running_status(p)}
    base.update(changes)
    return proxy(**base)


def test_deletion_without_finalizer_does_nothing(r):
    step = r.plan(deleting(metadata__finalizers=[]))
    assert step.action is None and not step.remove_finalizer


def test_deletion_without_an_id_on_an_unknown_provider_releases_at_once(r):
    step = r.plan(deleting(status={}, spec__provider="never-configured"))
    assert step.remove_finalizer and step.action is None


def test_skip_cleanup_annotation_releases(r):
    step = r.plan(deleting(metadata__annotations={api.SKIP_CLEANUP_ANNOTATION: "true"}))
    assert step.remove_finalizer and step.action is None
    assert step.events[0][1] == "CleanupSkipped"


def test_deletion_deletes_until_gone(r):
    p = deleting()
    delete = r.plan(p).action
    assert (delete.op, delete.phase, delete.provider_id) == (DELETE, PHASE_FINAL, p.status["providerID"])
    returned_early = r.apply(p, delete, Answer(ok=True, instance=instance("Terminated")))
    assert returned_early.requeue_after == SETTINGS.deletion_poll and not returned_early.remove_finalizer
    done = r.apply(p, delete, Answer(ok=True, instance={"id": delete.provider_id, "state": "absent"}))
    assert done.remove_finalizer
    gone = r.apply(p, delete, Answer(ok=False, error_class="not_found"))
    assert gone.remove_finalizer


def test_deletion_failures_are_never_latched(r):
    p = deleting()
    delete = r.plan(p).action
    perm = r.apply(p, delete, Answer(ok=False, error_class="permanent", message="denied"))
    assert perm.backoff and not perm.remove_finalizer
    assert not any(c["type"] == api.COND_PERMANENT for c in perm.status.get("conditions", []))
    assert api.SKIP_CLEANUP_ANNOTATION in perm.events[0][2]
    quota = r.apply(p, delete, Answer(ok=False, error_class="quota_exceeded", message="rate"))
    assert quota.requeue_after == SETTINGS.quota_retry
    transient = r.apply(p, delete, Answer(ok=False, error_class="transient", message="down"))
    assert transient.backoff


# -- spec -----------------------------------------------------------------------------------


def test_spec_hash_covers_every_field_and_not_secret_content():
    base = obj()
    h = ProxySpec.from_object(base).hash()
    for path, value in [
        ("provider", "other"),
        ("port", 8080),
        ("placement", {"zone": "z"}),
        ("cloudInit", {"inline": "x"}),
        ("cloudInit", {"secretRef": {"name": "s", "key": "k"}}),
    ]:
        changed = copy.deepcopy(base)
        changed["spec"][path] = value
        assert ProxySpec.from_object(changed).hash() != h, path
    assert ProxySpec.from_object(copy.deepcopy(base)).hash() == h
    secret = "SENTINEL-cloud-init"
    assert secret not in repr(
        ProxySpec.from_object(dict(base, spec={"provider": "a", "cloudInit": {"inline": secret}}))
    )
