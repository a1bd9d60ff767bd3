"""Table tests: conditions and Events say what changed, once, with observedGeneration (issue 14).

A transient poll failure does not flip a serving proxy's Ready; a provider that left the
providers file while its Proxies still have instances is a configuration mistake reported by the
controller once, not a per-Proxy latch; every status written carries observedGeneration; Events
are emitted on a transition, not on every poll.
"""

from __future__ import annotations

from egress_proxies_controller import api
from egress_proxies_controller.proxy.reconciler import Answer, Reconciler

from .test_reconciler import NOW, SETTINGS, cond, instance, proxy, running_status


def reconciler(*providers) -> Reconciler:
    return Reconciler(SETTINGS, providers or ("local",), now=lambda: NOW)


def ready_proxy(generation: int = 1, observed: int | None = None, **status):
    p = proxy()
    seen = generation if observed is None else observed
    base = running_status(p, provider="local", observedGeneration=seen, **status)
    base["conditions"] = [
        {
            "type": api.COND_READY,
            "status": "True",
            "reason": "Running",
            "message": "proxy is running at 127.77.0.1",
            "observedGeneration": generation,
            "lastTransitionTime": NOW,
        }
    ]
    return proxy(metadata__generation=generation, status=base)


def test_transient_poll_failure_keeps_ready_and_reports_it_in_its_own_condition():
    r = reconciler()
    p = ready_proxy()
    step = r.apply(p, r.plan(p).action, Answer(ok=False, error_class="transient", message="slow answer"))
    assert cond(step.status, api.COND_READY)["status"] == "True"
    failing = cond(step.status, api.COND_PROVIDER_REACHABLE)
    assert failing["status"] == "False" and "slow answer" in failing["message"]
    assert step.backoff
    healed = r.apply(
        proxy(status=step.status),
        r.plan(proxy(status=step.status)).action,
        Answer(ok=True, instance=instance("Running", "127.77.0.1")),
    )
    assert cond(healed.status, api.COND_PROVIDER_REACHABLE)["status"] == "True"


def test_removed_provider_with_an_instance_is_not_latched_nor_called():
    """Only Ready says it (Unknown, ProviderNotConfigured: issue 40 §6), no latch, no Event."""
    r = reconciler("other")  # "local" left the providers file
    step = r.plan(ready_proxy())
    assert step.action is None and step.events == []
    assert cond(step.status, api.COND_READY)["reason"] == api.REASON_PROVIDER_NOT_CONFIGURED
    assert not any(
        c["type"] == api.COND_PERMANENT and c["status"] == "True" for c in step.status["conditions"]
    )
    assert not step.backoff  # re-planned when the providers file changes


def test_retrying_create_sets_observed_generation():
    r = reconciler()
    p = proxy(metadata__generation=4)
    step = r.apply(p, r.plan(p).action, Answer(ok=False, error_class="transient", message="down"))
    assert step.status["observedGeneration"] == 4


def test_lost_instance_sets_observed_generation():
    r = reconciler()
    p = ready_proxy(generation=3, observed=2)  # e.g. an annotation-only edit since the last write
    step = r.apply(p, r.plan(p).action, Answer(ok=False, error_class="not_found", message="gone"))
    assert step.status["observedGeneration"] == 3


def test_replacing_event_once_per_replacement():
    r = reconciler()
    p = ready_proxy(specHash="old")
    first = r.apply(p, r.plan(p).action, Answer(ok=True, instance=instance("Terminated")))
    assert [e[1] for e in first.events] == ["Replacing"]
    again = proxy(status=first.status)
    second = r.apply(again, r.plan(again).action, Answer(ok=True, instance=instance("Terminated")))
    assert second.events == []


def test_recycling_event_once_per_recycle():
    r = reconciler()
    p = ready_proxy(state="Stopped", ip="")
    first = r.apply(p, r.plan(p).action, Answer(ok=True, instance=instance("Terminated")))
    assert [e[1] for e in first.events] == ["Recycling"]
    again = proxy(status=first.status)
    second = r.apply(again, r.plan(again).action, Answer(ok=True, instance=instance("Terminated")))
    assert second.events == []


def test_cleanup_failed_event_once_per_distinct_failure():
    r = reconciler()
    p = ready_proxy()
    gone = proxy(metadata__deletionTimestamp=NOW, status=p.status)
    first = r.apply(gone, r.plan(gone).action, Answer(ok=False, error_class="transient", message="down"))
    assert [e[1] for e in first.events] == ["CleanupFailed"]
    again = proxy(metadata__deletionTimestamp=NOW, status=first.status)
    second = r.apply(again, r.plan(again).action, Answer(ok=False, error_class="transient", message="down"))
    assert second.events == [] and second.backoff
    other = r.apply(again, r.plan(again).action, Answer(ok=False, error_class="permanent", message="denied"))
    assert [e[1] for e in other.events] == ["CleanupFailed"]
