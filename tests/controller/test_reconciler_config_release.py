"""A latch is released by its provider's configuration changing after it, and never written from
a call planned under an older configuration.

A rotated kubeconfig or SSH key (a 401 or an SSH authentication failure latched before it), or a
libvirt host put back in the providers file, must bring the latched Proxies back without anyone
editing their specs; the latch message itself promises that fixing the providers file is enough.
"""

from __future__ import annotations

import datetime

from egress_proxies_controller import api
from egress_proxies_controller.proxy.reconciler import GET, PERMANENT, PHASE_POLL, Answer, Reconciler

from controller.test_reconciler import NOW, SETTINGS, cond, proxy, running_status

LATCHED_AT = datetime.datetime.fromisoformat(NOW).timestamp()


def latched_status() -> dict:
    r = Reconciler(SETTINGS, ["local"], now=lambda: NOW)
    p = proxy()
    return r._latch(p, r.plan(p), "GetFailed", "local get: permanent: 401 Unauthorized", 1).status


def test_a_latch_stays_while_its_providers_configuration_is_older():
    r = Reconciler(SETTINGS, ["local"], now=lambda: NOW, changed_at={"local": LATCHED_AT - 60})
    step = r.plan(proxy(status=dict(running_status(proxy()), **latched_status())))
    assert step.action is None and step.status is None


def test_a_latch_is_released_when_its_providers_configuration_changed_after_it():
    r = Reconciler(SETTINGS, ["local"], now=lambda: NOW, changed_at={"local": LATCHED_AT + 5})
    step = r.plan(proxy(status=dict(running_status(proxy()), **latched_status())))
    assert step.action is not None and (step.action.op, step.action.phase) == (GET, PHASE_POLL)
    assert cond(step.status, api.COND_PERMANENT)["status"] == "False"
    assert cond(step.status, api.COND_PERMANENT)["reason"] == "Released"


def test_a_change_within_the_latchs_second_releases_it():
    """lastTransitionTime has whole seconds: the change may have come after the latch in it."""
    r = Reconciler(SETTINGS, ["local"], now=lambda: NOW, changed_at={"local": LATCHED_AT + 0.4})
    assert r.plan(proxy(status=dict(running_status(proxy()), **latched_status()))).action is not None


def test_the_provider_that_made_the_instance_counts_too():
    """A Proxy moving to another provider latched on its old one's answer."""
    status = dict(running_status(proxy()), provider="old", **latched_status())
    r = Reconciler(SETTINGS, ["local", "old"], now=lambda: NOW, changed_at={"old": LATCHED_AT + 5})
    assert r.plan(proxy(status=status)).action is not None


def test_a_permanent_answer_to_a_call_planned_under_an_older_configuration_is_retried():
    """The call may have failed with the credentials the change just replaced."""
    r = Reconciler(SETTINGS, ["local"], now=lambda: NOW, epochs={"local": 3})
    p = proxy(status=running_status(proxy(), conditions=[]))
    action = r.plan(p).action
    assert action.config_epoch == 3
    # The credential file rotated while the call ran: the answer's reconcile has the new view.
    r = Reconciler(SETTINGS, ["local"], now=lambda: NOW, epochs={"local": 4})
    step = r.apply(p, action, Answer(ok=False, error_class=PERMANENT, message="401 Unauthorized"))
    assert step.backoff and not any(c["type"] == api.COND_PERMANENT for c in step.status["conditions"])
    reachable = cond(step.status, api.COND_PROVIDER_REACHABLE)
    assert reachable["status"] == "False" and "configuration changed during the call" in reachable["message"]


def test_a_reconcile_keeps_the_view_it_started_with_while_the_configuration_reloads():
    """Issue 38: the Reconciler reads no shared mutable state. The providers file's watch
    changes its dicts on another thread (ProvidersConfig.refresh); a reconcile under way
    decides from the view its Reconciler was made with, and the next one gets a new Reconciler."""
    names, changed_at, epochs = ["local"], {}, {"local": 3}
    r = Reconciler(SETTINGS, names, now=lambda: NOW, changed_at=changed_at, epochs=epochs)
    p = proxy(status=running_status(proxy(), conditions=[]))
    action = r.plan(p).action
    names.append("other")  # a new version taken meanwhile, on the watch's thread
    changed_at["local"], epochs["local"] = LATCHED_AT + 5, 4
    step = r.apply(p, action, Answer(ok=False, error_class=PERMANENT, message="401 Unauthorized"))
    assert cond(step.status, api.COND_PERMANENT)["status"] == "True"  # decided under epoch 3
    assert dict(r.epochs) == {"local": 3} and dict(r.changed_at) == {} and "other" not in r.configured


def test_a_permanent_answer_under_the_same_configuration_is_latched():
    r = Reconciler(SETTINGS, ["local"], now=lambda: NOW, epochs={"local": 3})
    p = proxy(status=running_status(proxy(), conditions=[]))
    step = r.apply(p, r.plan(p).action, Answer(ok=False, error_class=PERMANENT, message="401 Unauthorized"))
    assert cond(step.status, api.COND_PERMANENT)["status"] == "True"
    assert "credential files" in cond(step.status, api.COND_PERMANENT)["message"]
