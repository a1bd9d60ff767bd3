"""Table tests: the provider that made an instance is the one replacement and deletion talk to.

``status.provider`` records who made the instance. A change of ``spec.provider`` is a
replacement: delete on the old provider, wait until it says the instance is gone, then create on
the new one; never two instances at once. Deletion goes to the recorded provider too, and a
Proxy without a ``providerID`` is looked up by name there before it is released (a create may
have run before a crash).
"""

from __future__ import annotations

from egress_proxies_controller import api
from egress_proxies_controller.proxy.reconciler import CREATE, DELETE, GET, Answer, Reconciler

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.names import name_from_uid

from .test_reconciler import NOW, SETTINGS, UID, cond, instance, proxy, running_status


def reconciler(*providers) -> Reconciler:
    return Reconciler(SETTINGS, providers or ("local", "other"), now=lambda: NOW)


def moved(**status) -> object:
    """A Proxy made on ``local`` whose spec now names ``other``."""
    p = proxy()
    return proxy(spec__provider="other", status=running_status(p, provider="local", **status))


def test_create_records_the_provider_that_made_the_instance():
    r = reconciler()
    p = proxy()
    step = r.apply(p, r.plan(p).action, Answer(ok=True, instance=instance("Running", "127.77.0.1")))
    assert step.status["provider"] == "local"


def test_provider_change_deletes_on_the_old_provider_first():
    p = moved()
    action = reconciler().plan(p).action
    assert (action.op, action.provider, action.provider_id) == (DELETE, "local", p.status["providerID"])


def test_provider_change_creates_on_the_new_provider_only_once_the_old_is_gone():
    r = reconciler()
    p = moved()
    delete = r.plan(p).action
    still = r.apply(p, delete, Answer(ok=True, instance=instance("Terminated")))
    assert still.status is None or still.status.get("providerID") == p.status["providerID"]
    assert r.plan(proxy(spec__provider="other", status=still.status or p.status)).action.op == DELETE
    gone = r.apply(p, delete, Answer(ok=True, instance={"id": delete.provider_id, "state": "absent"}))
    assert gone.status["providerID"] == "" and not gone.status.get("provider")
    create = r.plan(proxy(spec__provider="other", status=gone.status)).action
    assert (create.op, create.provider) == (CREATE, "other")


def test_provider_change_with_the_old_provider_unconfigured_never_creates():
    r = reconciler("other")
    step = r.plan(moved())
    assert step.action is None
    assert step.backoff or step.requeue_after is not None  # retried: the provider may come back
    ready = cond(step.status, api.COND_READY)
    assert ready["reason"] == "OldProviderNotConfigured" and "local" in ready["message"]
    assert not any(
        c["type"] == api.COND_PERMANENT and c["status"] == "True" for c in step.status["conditions"]
    )


def test_deletion_talks_to_the_recorded_provider():
    p = moved(**{})
    gone = proxy(
        spec__provider="other", metadata__deletionTimestamp=NOW, status=dict(p.status, provider="local")
    )
    action = reconciler().plan(gone).action
    assert (action.op, action.provider, action.provider_id) == (DELETE, "local", p.status["providerID"])


def test_deletion_without_an_id_looks_the_instance_up_by_name_first():
    r = reconciler()
    p = proxy(metadata__deletionTimestamp=NOW, status={})
    step = r.plan(p)
    assert not step.remove_finalizer
    assert (step.action.op, step.action.provider, step.action.provider_id) == (DELETE, "local", "")
    assert (step.action.name, step.action.uid) == (name_from_uid(UID), UID)
    left = r.apply(p, step.action, Answer(ok=True, instance=instance("Terminated")))
    assert not left.remove_finalizer and left.requeue_after == SETTINGS.deletion_poll
    found_none = r.apply(p, step.action, Answer(ok=True, instance={"id": "", "state": "absent"}))
    assert found_none.remove_finalizer


def test_deletion_without_an_id_on_an_unconfigured_provider_releases():
    """Nothing can have been created on a provider the file never had (the usual case: a
    Proxy latched ProviderNotConfigured and then deleted)."""
    step = reconciler().plan(proxy(spec__provider="never", metadata__deletionTimestamp=NOW, status={}))
    assert step.remove_finalizer and step.action is None


def test_a_running_proxy_whose_provider_left_the_file_says_so_and_recovers_when_it_is_back():
    """Issue 40 §6: the providers file lost the provider that made a Running Proxy's instance
    and the Proxy stayed Ready=True with unchanged conditions (only the log, a Lease Event and
    /readyz said so). Its Ready is Unknown (ProviderNotConfigured) now, naming the provider and
    what to do, with no call and nothing else of its status touched; once the provider is back
    the next plan polls the instance and Ready is True again."""
    configured, lost = reconciler("local", "other"), reconciler("other")
    p = proxy()
    polled = configured.apply(
        p, configured.plan(p).action, Answer(ok=True, instance=instance("Running", "127.77.0.1"))
    )
    ready_before = cond(polled.status, api.COND_READY)
    assert ready_before["status"] == "True"
    running = proxy(status=polled.status)

    step = lost.plan(running)
    assert step.action is None
    ready = cond(step.status, api.COND_READY)
    assert (ready["status"], ready["reason"]) == ("Unknown", api.REASON_PROVIDER_NOT_CONFIGURED)
    assert "provider 'local'" in ready["message"] and running.status["providerID"] in ready["message"]
    assert "add the provider back" in ready["message"]
    untouched = {k: v for k, v in step.status.items() if k != "conditions"}
    assert untouched == {k: v for k, v in running.status.items() if k != "conditions"}
    assert [c for c in step.status["conditions"] if c["type"] != api.COND_READY] == [
        c for c in running.status["conditions"] if c["type"] != api.COND_READY
    ]
    assert not any(
        c["type"] == api.COND_PERMANENT and c["status"] == "True" for c in step.status["conditions"]
    )
    said = proxy(status=step.status)
    assert lost.plan(said).status is None  # said once: no write on every plan

    back = configured.plan(said)
    assert (back.action.op, back.action.provider) == (GET, "local")
    again = configured.apply(said, back.action, Answer(ok=True, instance=instance("Running", "127.77.0.1")))
    assert (cond(again.status, api.COND_READY)["status"], cond(again.status, api.COND_READY)["reason"]) == (
        "True",
        "Running",
    )
