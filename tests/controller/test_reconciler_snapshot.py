"""Table tests: an answer belongs to the snapshot its action was planned from (issue 14).

The manager hands ``apply`` the Proxy as it is when the answer arrives, which may be a later
generation than the one planned for. These rows check that what is written describes the
snapshot (its spec hash, its generation) and that the next plan, from the new object, decides
afresh: a create for generation 1 is recorded with generation 1's hash and then replaced; a
Permanent error from generation 1 never latches generation 2.
"""

from __future__ import annotations

from egress_proxies_controller import api
from egress_proxies_controller.proxy.reconciler import CREATE, DELETE, Answer, Reconciler

from .test_reconciler import NOW, SETTINGS, cond, instance, proxy, running_status


def reconciler() -> Reconciler:
    return Reconciler(SETTINGS, ["local", "other"], now=lambda: NOW)


def test_action_carries_the_snapshot_it_was_planned_from():
    p = proxy(metadata__generation=3, metadata__resourceVersion="41")
    action = reconciler().plan(p).action
    assert (action.generation, action.spec_hash, action.resource_version) == (3, p.spec.hash(), "41")


def test_create_answered_after_a_spec_edit_records_the_planned_spec_and_is_replaced():
    r = reconciler()
    planned = proxy()
    action = r.plan(planned).action
    edited = proxy(metadata__generation=2, spec__port=8080)
    step = r.apply(edited, action, Answer(ok=True, instance=instance("Running", "127.77.0.1")))
    assert step.status["providerID"] == instance()["id"]
    assert step.status["specHash"] == planned.spec.hash() != edited.spec.hash()
    assert step.status["observedGeneration"] == 1
    assert cond(step.status, api.COND_READY)["observedGeneration"] == 1
    nxt = r.plan(proxy(metadata__generation=2, spec__port=8080, status=step.status)).action
    assert (nxt.op, nxt.provider_id) == (DELETE, instance()["id"])  # the old-spec instance goes


def test_permanent_error_of_generation_1_does_not_latch_generation_2():
    r = reconciler()
    action = r.plan(proxy()).action
    edited = proxy(metadata__generation=2, spec__port=8080)
    step = r.apply(edited, action, Answer(ok=False, error_class="permanent", message="bad image"))
    assert cond(step.status, api.COND_PERMANENT)["observedGeneration"] == 1
    assert step.status["observedGeneration"] == 1
    retry = r.plan(proxy(metadata__generation=2, spec__port=8080, status=step.status))
    assert retry.action is not None and retry.action.op == CREATE  # the user's fix is tried


def test_poll_answer_for_an_older_generation_keeps_its_observed_generation():
    r = reconciler()
    p = proxy()
    p = proxy(status=running_status(p, state="Provisioning", ip=""))
    action = r.plan(p).action
    later = proxy(metadata__generation=2, status=p.status)  # e.g. an annotation-only edit
    step = r.apply(later, action, Answer(ok=True, instance=instance("Running", "127.77.0.3")))
    assert step.status["observedGeneration"] == 1
