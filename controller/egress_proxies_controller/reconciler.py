"""The reconciler: a pure state machine from (Proxy, last provider answer) to the next step.

Blueprint §1-§3 made explicit. ``plan`` looks at a Proxy and decides the next provider call
(or a status/finalizer change needing none); ``apply`` takes the answer to that call and decides
the status to write, the finalizer change, the requeue and, where the contract chains calls
(Stopped -> delete, replacement -> delete, deletion -> delete), a follow-up call for the next
tick. Nothing here touches the network, so every row is table-tested (tests/controller/).

Guarantees:
* the providerID reaches status only after create returned it;
* NotFound clears the id and creates again (normal), advances a replacement, or releases the
  finalizer (deleting); it is the only answer that ever does;
* Permanent is latched as PermanentError until ``metadata.generation`` changes, or until the
  missing provider it names appears in the providers file;
* QuotaExceeded sets its condition and retries after ``quota_retry`` without counting as an
  error; everything else unclassified backs off (rate-limited requeue);
* while deleting, a permanent Get still tries Delete, and the skip-cleanup annotation releases
  a Proxy whose cleanup keeps failing.
"""

from __future__ import annotations

import dataclasses

from . import api, conditions
from .spec import ProxySpec

CREATE, GET, DELETE = "create", "get", "delete"
NOT_FOUND, QUOTA, TRANSIENT, PERMANENT = "not_found", "quota_exceeded", "transient", "permanent"

# Why a call is made: decides how its answer is read.
PHASE_CREATE = "create"
PHASE_POLL = "poll"
PHASE_RECYCLE = "recycle"  # delete a Stopped/Terminated instance, then create again
PHASE_REPLACE_GET = "replace-get"
PHASE_REPLACE_DELETE = "replace-delete"
PHASE_FINAL_GET = "final-get"
PHASE_FINAL_DELETE = "final-delete"


@dataclasses.dataclass(frozen=True)
class Settings:
    provisioning_poll: float = 10.0
    deletion_poll: float = 10.0
    requeue_now: float = 1.0
    quota_retry: float = 300.0
    running_poll: float = 60.0


@dataclasses.dataclass(frozen=True)
class Action:
    op: str  # create | get | delete
    phase: str
    provider: str
    provider_id: str = ""
    name: str = ""
    uid: str = ""


@dataclasses.dataclass(frozen=True)
class Answer:
    """What the executor read back for one action."""

    ok: bool
    instance: dict | None = None  # id, name, uid, state (or "absent"), ip, created_at
    error_class: str = ""
    message: str = ""


@dataclasses.dataclass
class Step:
    action: Action | None = None
    status: dict | None = None  # the full new status, when it changed
    add_finalizer: bool = False
    remove_finalizer: bool = False
    requeue_after: float | None = None
    backoff: bool = False  # rate-limited requeue: an error that is neither quota nor permanent
    events: list = dataclasses.field(default_factory=list)  # (type, reason, message)


@dataclasses.dataclass(frozen=True)
class Proxy:
    """The parts of a Proxy object the reconciler reads."""

    namespace: str
    name: str
    uid: str
    generation: int
    deleting: bool
    finalizers: tuple
    annotations: dict
    spec: ProxySpec
    status: dict

    @classmethod
    def from_object(cls, obj: dict) -> Proxy:
        meta = obj.get("metadata") or {}
        return cls(
            namespace=meta.get("namespace", ""),
            name=meta.get("name", ""),
            uid=meta.get("uid", ""),
            generation=int(meta.get("generation") or 0),
            deleting=bool(meta.get("deletionTimestamp")),
            finalizers=tuple(meta.get("finalizers") or ()),
            annotations=dict(meta.get("annotations") or {}),
            spec=ProxySpec.from_object(obj),
            status=dict(obj.get("status") or {}),
        )

    @property
    def key(self) -> str:
        return "%s/%s" % (self.namespace, self.name)


def instance_name(uid: str) -> str:
    """The collection's name_from_uid, repeated here so the controller imports no module_utils."""
    import base64
    import hashlib

    return "proxy-" + base64.b32encode(hashlib.sha256(uid.encode()).digest()).decode().lower()[:16]


class Reconciler:
    def __init__(self, settings: Settings, configured_providers, now=conditions.now_rfc3339):
        self.settings = settings
        self.configured = frozenset(configured_providers)
        self._now = now

    # -- plan --------------------------------------------------------------------------

    def plan(self, proxy: Proxy) -> Step:
        if proxy.deleting:
            return self._plan_deletion(proxy)
        step = Step(add_finalizer=api.FINALIZER not in proxy.finalizers)
        status = dict(proxy.status)
        conds = status.get("conditions") or []
        latched = conditions.find(conds, api.COND_PERMANENT)
        if (
            latched
            and latched.get("status") == "True"
            and latched.get("observedGeneration") == proxy.generation
        ):
            released = (
                latched.get("reason") == api.REASON_PROVIDER_NOT_CONFIGURED
                and proxy.spec.provider in self.configured
            )
            if not released:
                return step  # latched: no provider calls until the spec (generation) changes
        if proxy.spec.provider not in self.configured:
            message = (
                "provider %r is not in the providers file: add it there or fix spec.provider"
                % proxy.spec.provider
            )
            return self._latch(proxy, step, api.REASON_PROVIDER_NOT_CONFIGURED, message)
        if latched and latched.get("status") == "True":
            status["conditions"] = conditions.set_condition(
                conds, api.COND_PERMANENT, False, "Released", "", proxy.generation, self._now()
            )
            step.status = status
        provider_id = status.get("providerID") or ""
        base = {"provider": proxy.spec.provider, "name": instance_name(proxy.uid), "uid": proxy.uid}
        if not provider_id:
            step.action = Action(CREATE, PHASE_CREATE, **base)
        elif status.get("specHash") != proxy.spec.hash():
            step.action = Action(GET, PHASE_REPLACE_GET, provider_id=provider_id, **base)
        elif status.get("state") in ("Stopped", "Terminated"):
            step.action = Action(DELETE, PHASE_RECYCLE, provider_id=provider_id, **base)
        else:
            step.action = Action(GET, PHASE_POLL, provider_id=provider_id, **base)
        return step

    def _plan_deletion(self, proxy: Proxy) -> Step:
        if api.FINALIZER not in proxy.finalizers:
            return Step()
        provider_id = proxy.status.get("providerID") or ""
        if proxy.annotations.get(api.SKIP_CLEANUP_ANNOTATION) == "true":
            return Step(
                remove_finalizer=True,
                events=[
                    (
                        "Warning",
                        "CleanupSkipped",
                        "released without deleting %s" % (provider_id or "anything"),
                    )
                ],
            )
        if not provider_id:
            return Step(remove_finalizer=True)
        action = Action(
            GET,
            PHASE_FINAL_GET,
            proxy.spec.provider,
            provider_id,
            instance_name(proxy.uid),
            proxy.uid,
        )
        return Step(action=action)

    # -- apply -------------------------------------------------------------------------

    def apply(self, proxy: Proxy, action: Action, answer: Answer) -> Step:
        handler = {
            PHASE_CREATE: self._after_create,
            PHASE_POLL: self._after_poll,
            PHASE_RECYCLE: self._after_recycle,
            PHASE_REPLACE_GET: self._after_replace_get,
            PHASE_REPLACE_DELETE: self._after_replace_delete,
            PHASE_FINAL_GET: self._after_final_get,
            PHASE_FINAL_DELETE: self._after_final_delete,
        }[action.phase]
        return handler(proxy, action, answer)

    def _after_create(self, proxy, action, answer) -> Step:
        if not answer.ok:
            if answer.error_class == NOT_FOUND:  # NotFound inside create means "try again"
                answer = dataclasses.replace(answer, error_class=TRANSIENT)
            return self._failed(proxy, answer, "CreateFailed")
        instance = answer.instance or {}
        status = dict(proxy.status)
        status.update(providerID=instance.get("id", ""), specHash=proxy.spec.hash())
        step = self._observed(proxy, status, instance)
        step.events.append(
            ("Normal", "Created", "created %s on provider %s" % (instance.get("id"), action.provider))
        )
        if instance.get("state") != "Running":
            step.requeue_after = self.settings.requeue_now  # first poll soon; then provisioning_poll
        return step

    def _after_poll(self, proxy, action, answer) -> Step:
        if answer.ok and (answer.instance or {}).get("state") != "absent":
            return self._observed(proxy, dict(proxy.status), answer.instance)
        if answer.ok or answer.error_class == NOT_FOUND:
            status = self._forget_instance(
                proxy, "instance %s is gone; creating it again" % action.provider_id
            )
            return Step(
                status=status,
                requeue_after=self.settings.requeue_now,
                events=[("Warning", "InstanceLost", "%s not found; creating it again" % action.provider_id)],
            )
        return self._failed(proxy, answer, "GetFailed")

    def _after_recycle(self, proxy, action, answer) -> Step:
        if answer.ok or answer.error_class == NOT_FOUND:
            status = self._forget_instance(
                proxy, "instance %s stopped and was deleted; creating it again" % action.provider_id
            )
            gone = answer.error_class == NOT_FOUND or (answer.instance or {}).get("state") in (
                "absent",
                None,
                "",
            )
            return Step(
                status=status if gone else None,
                requeue_after=self.settings.requeue_now if gone else self.settings.deletion_poll,
                events=[("Normal", "Recycling", "deleted stopped instance %s" % action.provider_id)],
            )
        return self._failed(proxy, answer, "DeleteFailed")

    def _after_replace_get(self, proxy, action, answer) -> Step:
        if (
            answer.ok and (answer.instance or {}).get("state") == "absent"
        ) or answer.error_class == NOT_FOUND:
            status = self._forget_instance(proxy, "old instance gone; creating the replacement", "Replacing")
            return Step(
                status=status,
                requeue_after=self.settings.requeue_now,
                events=[("Normal", "Replacing", "old instance gone; creating the replacement")],
            )
        if answer.ok:
            follow = dataclasses.replace(action, op=DELETE, phase=PHASE_REPLACE_DELETE)
            status = dict(proxy.status)
            status["conditions"] = conditions.set_condition(
                status.get("conditions"),
                api.COND_READY,
                False,
                "Replacing",
                "spec changed: deleting %s before creating its replacement" % action.provider_id,
                proxy.generation,
                self._now(),
            )
            return Step(
                action=follow,
                status=status,
                events=[("Normal", "Replacing", "spec changed: replacing %s" % action.provider_id)],
            )
        return self._failed(proxy, answer, "GetFailed")

    def _after_replace_delete(self, proxy, action, answer) -> Step:
        if answer.ok or answer.error_class == NOT_FOUND:
            # Poll until Get says NotFound: only then is the (same) name free for the replacement.
            return Step(requeue_after=self.settings.deletion_poll)
        return self._failed(proxy, answer, "DeleteFailed")

    def _after_final_get(self, proxy, action, answer) -> Step:
        if answer.error_class == NOT_FOUND or (
            answer.ok and (answer.instance or {}).get("state") == "absent"
        ):
            return Step(
                remove_finalizer=True,
                events=[("Normal", "Deleted", "instance %s is gone" % action.provider_id)],
            )
        if answer.ok or answer.error_class == PERMANENT:
            # A permanent Get (e.g. a host removed from the config) still tries Delete.
            return Step(action=dataclasses.replace(action, op=DELETE, phase=PHASE_FINAL_DELETE))
        return self._deletion_retry(answer)

    def _after_final_delete(self, proxy, action, answer) -> Step:
        if answer.ok and (answer.instance or {}).get("state") in ("absent", "", None):
            return Step(
                remove_finalizer=True,
                events=[("Normal", "Deleted", "instance %s deleted" % action.provider_id)],
            )
        if answer.ok or answer.error_class == NOT_FOUND:
            return Step(requeue_after=self.settings.deletion_poll)
        return self._deletion_retry(answer)

    def _deletion_retry(self, answer) -> Step:
        events = [
            (
                "Warning",
                "CleanupFailed",
                "%s (set annotation %s=true to release without cleanup)"
                % (answer.message, api.SKIP_CLEANUP_ANNOTATION),
            )
        ]
        if answer.error_class == QUOTA:
            return Step(requeue_after=self.settings.quota_retry, events=events)
        return Step(backoff=True, events=events)  # Permanent is not latched while deleting

    # -- shared ------------------------------------------------------------------------

    def _forget_instance(self, proxy, message: str, reason: str = "Recreating") -> dict:
        """Status without the instance: the id is cleared only once the instance is gone, so
        the next plan creates (the same name) again. A new instance is probed afresh."""
        status = dict(proxy.status)
        status.update(providerID="", state="", ip="")
        conds = conditions.without(status.get("conditions"), api.COND_HEALTHY)
        status["conditions"] = conditions.set_condition(
            conds, api.COND_READY, False, reason, message, proxy.generation, self._now()
        )
        return status

    def _observed(self, proxy, status: dict, instance: dict) -> Step:
        state = instance.get("state", "")
        status.update(
            state=state,
            ip=instance.get("ip", "") if state == "Running" else "",
            observedGeneration=proxy.generation,
        )
        if state != "Running":  # a new or restarted instance is probed afresh
            status["conditions"] = conditions.without(status.get("conditions"), api.COND_HEALTHY)
        now, gen = self._now(), proxy.generation
        conds = status.get("conditions")
        conds = conditions.set_condition(conds, api.COND_QUOTA, False, "QuotaAvailable", "", gen, now)
        conds = conditions.set_condition(conds, api.COND_PERMANENT, False, "NoError", "", gen, now)
        step = Step()
        was_ready = conditions.is_true(proxy.status.get("conditions"), api.COND_READY)
        healthy = conditions.find(conds, api.COND_HEALTHY)
        if state == "Running" and healthy is not None and healthy.get("status") == "False":
            # Ready means Running and Healthy: the health engine saw this proxy fail.
            conds = conditions.set_condition(
                conds, api.COND_READY, False, "Unhealthy", healthy.get("message", ""), gen, now
            )
            step.requeue_after = self.settings.provisioning_poll
        elif state == "Running":
            conds = conditions.set_condition(
                conds, api.COND_READY, True, "Running", "proxy is running at %s" % status["ip"], gen, now
            )
            step.requeue_after = self.settings.running_poll
            if not was_ready:
                step.events.append(("Normal", "Ready", "proxy is running at %s" % status["ip"]))
        elif state == "Provisioning":
            conds = conditions.set_condition(
                conds, api.COND_READY, False, "Provisioning", "the instance is starting", gen, now
            )
            step.requeue_after = self.settings.provisioning_poll
        else:  # Stopped / Terminated: the next plan deletes it and creates it again
            conds = conditions.set_condition(
                conds,
                api.COND_READY,
                False,
                state or "Unknown",
                "the instance is %s; it will be replaced" % state,
                gen,
                now,
            )
            step.requeue_after = self.settings.requeue_now
            step.events.append(
                ("Warning", state or "Unknown", "instance %s is %s" % (status.get("providerID"), state))
            )
        status["conditions"] = conds
        step.status = status
        return step

    def _failed(self, proxy, answer: Answer, reason: str) -> Step:
        status = dict(proxy.status)
        now, gen = self._now(), proxy.generation
        if answer.error_class == QUOTA:
            message = "%s; retrying every %ds" % (answer.message, int(self.settings.quota_retry))
            status["conditions"] = conditions.set_condition(
                status.get("conditions"), api.COND_QUOTA, True, "QuotaExceeded", message, gen, now
            )
            status["conditions"] = conditions.set_condition(
                status["conditions"],
                api.COND_READY,
                False,
                "QuotaExceeded",
                "the backend reports a quota or capacity limit: raise it or wait",
                gen,
                now,
            )
            return Step(
                status=status,
                requeue_after=self.settings.quota_retry,
                events=[("Warning", "QuotaExceeded", answer.message)],
            )
        if answer.error_class == PERMANENT:
            return self._latch(proxy, Step(), reason, answer.message)
        status["conditions"] = conditions.set_condition(
            status.get("conditions"),
            api.COND_READY,
            False,
            "Retrying",
            "%s (retrying with backoff)" % answer.message,
            gen,
            now,
        )
        return Step(status=status, backoff=True)

    def _latch(self, proxy, step: Step, reason: str, message: str) -> Step:
        status = dict(proxy.status)
        now, gen = self._now(), proxy.generation
        status["conditions"] = conditions.set_condition(
            status.get("conditions"),
            api.COND_PERMANENT,
            True,
            reason,
            "%s. Fix the spec or the providers file; nothing is retried until then." % message,
            gen,
            now,
        )
        status["conditions"] = conditions.set_condition(
            status["conditions"], api.COND_READY, False, "PermanentError", message, gen, now
        )
        status["observedGeneration"] = gen
        step.status = status
        step.events.append(("Warning", "PermanentError", message))
        return step
