"""A create that finds this Proxy's instance listening on another port (issue 28, §7's last
case): the instance was made before a crash, with the port the spec had then, and the spec's
port was edited before the controller came back. ``proxy_instance`` refuses it Permanent with
reason PortFixedAtCreation; the reconciler records and replaces it, never latches it."""

from __future__ import annotations

import dataclasses

from egress_proxies_controller import api
from egress_proxies_controller.proxy.reconciler import CREATE, Answer, Reconciler

from .test_reconciler import NOW, SETTINGS, cond, instance, proxy

PORT_FIXED = "PortFixedAtCreation"  # what proxy_instance answers (module_utils/core/errors.py)


def _refusal(found: str) -> Answer:
    message = (
        "local create %s: permanent: port: instance %s listens on port 3128, not 8080, and a "
        "port cannot change in place" % (found, found.split("/")[-1])
    )
    return Answer(
        ok=False,
        error_class="permanent",
        message=message,
        instance={"id": found, "failed": True, "reason": PORT_FIXED},
        reason=PORT_FIXED,
    )


def test_a_create_that_finds_the_instance_on_another_port_records_and_replaces_it():
    r = Reconciler(SETTINGS, ["local"], now=lambda: NOW)
    p = proxy(spec__port=8080)
    create = r.plan(p).action
    assert create.op == CREATE
    found = "local/%s" % create.name
    step = r.apply(p, create, _refusal(found))
    assert not [
        c for c in step.status["conditions"] if c["type"] == api.COND_PERMANENT and c["status"] == "True"
    ]
    assert (step.status["providerID"], step.status["provider"]) == (found, create.provider)
    assert cond(step.status, api.COND_READY)["reason"] == "Replacing"
    assert "8080" in cond(step.status, api.COND_READY)["message"]
    assert [e[1] for e in step.events] == ["Replacing"] and step.requeue_after == SETTINGS.requeue_now

    marked = proxy(spec__port=8080, status=step.status)
    delete = r.plan(marked).action
    assert (delete.op, delete.phase, delete.provider_id) == ("delete", "replace", found)
    gone = r.apply(marked, delete, Answer(ok=False, error_class="not_found", message="gone"))
    fresh = proxy(spec__port=8080, status=gone.status)
    again = r.plan(fresh).action
    assert (again.op, again.phase) == (CREATE, "create")
    made = r.apply(fresh, again, Answer(ok=True, instance=dict(instance("Running", "127.77.0.1"))))
    assert made.status["specHash"] == fresh.spec.hash()  # the replacement is over


def test_without_the_found_instance_or_with_another_reason_a_permanent_create_still_latches():
    r = Reconciler(SETTINGS, ["local"], now=lambda: NOW)
    p = proxy(spec__port=8080)
    create = r.plan(p).action
    bare = dataclasses.replace(_refusal("local/%s" % create.name), instance=None)  # nothing found
    other = Answer(ok=False, error_class="permanent", message="something else")
    for answer in (bare, other):
        step = r.apply(p, create, answer)
        assert cond(step.status, api.COND_PERMANENT)["status"] == "True"
