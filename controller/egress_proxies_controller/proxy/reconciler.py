"""The reconciler: a pure state machine from (Proxy, last provider answer) to the next step.

Blueprint §1-§3 made explicit. ``plan`` looks at a Proxy and decides the next provider call
(or a status/finalizer change needing none); ``apply`` takes the answer to that call and decides
the status to write, the finalizer change and the requeue. Every next call is planned from the
object again (a Stopped instance, a replacement or a deletion is a delete until the provider says
the instance is gone), never remembered between ticks. Nothing here touches the network, so every
row is table-tested (tests/controller/).

Guarantees:
* an answer is read against the snapshot its action was planned from: status records that
  snapshot's spec hash and generation, so an edit made meanwhile is re-planned, not absorbed;
* the providerID reaches status only after create returned it, with ``status.provider``, the
  provider that made it; replacement and deletion talk to that provider, and a new instance is
  created only once it said the old one is gone (never two at once);
* NotFound clears the id and creates again (normal), advances a replacement, or releases the
  finalizer (deleting); it is the only answer that ever does;
* Permanent is latched as PermanentError until ``metadata.generation`` changes, until the
  missing provider it names appears in the providers file, or until its provider's
  configuration (its entry, a credential file the entry names) changes after the latch (a
  rotated kubeconfig or SSH key, a host put back); an answer to a call planned under an older
  configuration of its provider is retried, never latched (the credentials it failed with may
  be the ones just replaced); a provider that left the file while its Proxies still have
  instances is a configuration mistake the manager reports once, not a latch;
* QuotaExceeded sets its condition and retries after ``quota_retry`` without counting as an
  error; everything else backs off (rate-limited requeue), and a failed poll keeps Ready;
* while deleting, a Proxy without a providerID is looked up by name before it is released, and
  the skip-cleanup annotation releases a Proxy whose cleanup keeps failing;
* with ``spec.auth`` the running poll is a create (present) carrying the Secret's credentials, so
  a rotated Secret is applied in place; a Secret that cannot be used is CredentialsApplied=False
  (SecretUnavailable), retried, never latched, and never lets an instance be created open;
* a provider whose credentials are fixed at creation (gcp, kvm) answers a rotated Secret's poll
  Permanent with reason CredentialsFixedAtCreation: that is not latched but replaces the instance
  the way a spec change does (status.specHash set to a value no spec has, so the replacement
  survives a restart; deleted first, created once gone);
* a create that finds this Proxy's instance (made before a crash) listening on another port than
  the spec's (edited since) is answered Permanent with reason PortFixedAtCreation: replaced the
  same way, never latched;
* ``Ready`` means Running and Healthy, and only the reconcile writes either: ``Healthy`` comes
  from the health engine's latest observation of this very instance (health_observations.py),
  applied when the engine queued the key (before its poll runs) and to every answer; health
  turns Ready only between ``Running`` and ``Unhealthy``, never over another reason.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from .. import api
from ..kube import conditions
from .health_observations import Observation
from .model import (
    CREATE,
    DELETE,
    GET,
    GONE_STATES,
    NOT_FOUND,
    PERMANENT,
    PHASE_CREATE,
    PHASE_FINAL,
    PHASE_POLL,
    PHASE_RECYCLE,
    PHASE_REPLACE,
    QUOTA,
    TRANSIENT,
    Action,
    Answer,
    Proxy,
    Settings,
    Step,
)

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import squid_conf
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.names import name_from_uid

#: the Ready reasons the health verdict chooses between; any other (Replacing, Retrying, ...) is
#: the reconciler's own decision and health leaves it
HEALTH_DECIDES = ("Running", "Unhealthy")
# The CredentialsRotated Event says the true bound (docs/auth.md, "Rotation"): Squid's
# credentials cache keeps a checked password for credentialsttl after its proxy has the new file.
ROTATED_IN_PLACE = (
    "credentials of %s updated in place: the old password opens new connections for at most %d s "
    "once the proxy has the new password file (local: at once; kubernetes: once the kubelet "
    "refreshes the Secret's volume, about a minute); connections that already used it keep it"
)


def _ready_of_running(status: dict, gen: int, now: str) -> tuple:
    """``(conditions, ready)`` of a Running instance: Ready means Running and Healthy (a proxy
    not probed yet counts as healthy)."""
    conds = status.get("conditions")
    healthy = conditions.find(conds, api.COND_HEALTHY)
    if healthy is not None and healthy.get("status") == "False":
        message = healthy.get("message", "")
        return conditions.set_condition(conds, api.COND_READY, False, "Unhealthy", message, gen, now), False
    message = "proxy is running at %s" % status.get("ip")
    return conditions.set_condition(conds, api.COND_READY, True, "Running", message, gen, now), True


def _gone(answer: Answer) -> bool:
    """The provider said the instance does not exist (a delete's read-back, or NotFound)."""
    return answer.error_class == NOT_FOUND or (
        answer.ok and (answer.instance or {}).get("state") in GONE_STATES
    )


class Reconciler:
    def __init__(
        self,
        settings: Settings,
        configured_providers,
        now=conditions.now_rfc3339,
        changed_at: dict | None = None,
        epochs: dict | None = None,
    ):
        self.settings = settings
        self.configured = frozenset(configured_providers)
        self._now = now
        # provider -> wall time / count of its configuration's changes (config/providers_file.py):
        # read-only copies made here, once per configuration, so the config watch changing its
        # dicts on another thread never changes what a reconcile under way decides from (the
        # manager makes a new Reconciler on each change and swaps it by reference)
        self.changed_at = types.MappingProxyType(dict(changed_at or {}))
        self.epochs = types.MappingProxyType(dict(epochs or {}))

    # -- plan --------------------------------------------------------------------------

    def _action(self, proxy: Proxy, op: str, phase: str, provider: str, provider_id: str = "") -> Action:
        return Action(
            op,
            phase,
            provider,
            provider_id,
            name_from_uid(proxy.uid),
            proxy.uid,
            proxy.generation,
            proxy.spec.hash(),
            proxy.resource_version,
            self.epochs.get(provider, 0),
        )

    def _configuration_changed_since(self, proxy: Proxy, latched: dict) -> bool:
        """Has the configuration of a provider this Proxy uses changed since ``latched`` was
        written? lastTransitionTime has whole seconds: a change within the latch's second
        counts (one call too many is harmless, a latch never released is not)."""
        try:
            since = datetime.datetime.fromisoformat(latched.get("lastTransitionTime", "")).timestamp()
        except (TypeError, ValueError):
            return True
        return any(self.changed_at.get(p, 0.0) >= since for p in (proxy.spec.provider, proxy.made_by))

    def plan(self, proxy: Proxy, health: Observation | None = None) -> Step:
        """``health``: the engine's latest observation of the Proxy's key (None: none yet)."""
        if proxy.deleting:
            return self._plan_deletion(proxy)
        step = Step(add_finalizer=api.FINALIZER not in proxy.finalizers)
        status = dict(proxy.status)
        conds = status.get("conditions") or []
        provider_id = status.get("providerID") or ""
        latched = conditions.find(conds, api.COND_PERMANENT)
        if (
            latched
            and latched.get("status") == "True"
            and latched.get("observedGeneration") == proxy.generation
        ):
            if latched.get("reason") == api.REASON_PROVIDER_NOT_CONFIGURED:
                released = proxy.spec.provider in self.configured
            else:
                released = self._configuration_changed_since(proxy, latched)
            if not released:
                return step  # latched: no provider calls until the spec (generation) changes
        if proxy.spec.provider not in self.configured:
            if provider_id and proxy.made_by == proxy.spec.provider:
                # Its provider left the providers file while it has an instance: a configuration
                # mistake (the manager logs it once). No call; Ready says so on the Proxy itself
                # until the file has the provider again, when the next poll sets Ready afresh.
                return self._provider_gone(proxy, step, provider_id)
            message = (
                "provider %r is not in the providers file: add it there or fix spec.provider"
                % proxy.spec.provider
            )
            # Ready says the same reason, so `kubectl get proxies` (its Reason column) tells why
            return self._latch(
                proxy,
                step,
                api.REASON_PROVIDER_NOT_CONFIGURED,
                message,
                proxy.generation,
                ready_reason=api.REASON_PROVIDER_NOT_CONFIGURED,
            )
        if latched and latched.get("status") == "True":
            status["conditions"] = conditions.set_condition(
                conds, api.COND_PERMANENT, False, "Released", "", proxy.generation, self._now()
            )
            step.status = status
        if not provider_id:
            step.action = self._action(proxy, CREATE, PHASE_CREATE, proxy.spec.provider)
        elif proxy.made_by != proxy.spec.provider or status.get("specHash") != proxy.spec.hash():
            return self._plan_replacement(proxy, step)
        elif status.get("state") in ("Stopped", "Terminated"):
            step.action = self._action(proxy, DELETE, PHASE_RECYCLE, proxy.made_by, provider_id)
        else:
            # With auth, the poll is a present (get, then the credentials synced in place): how
            # a rotated Secret reaches a running instance without a watch on Secrets.
            op = CREATE if proxy.spec.auth_secret else GET
            step.action = self._action(proxy, op, PHASE_POLL, proxy.made_by, provider_id)
            self._health_before_poll(proxy, step, health)
        return step

    def _provider_gone(self, proxy: Proxy, step: Step, provider_id: str) -> Step:
        """Ready Unknown (ProviderNotConfigured): the instance may still serve, but nothing reads,
        repairs or deletes it while its provider is missing from the providers file."""
        message = (
            "provider %r, which made instance %s, is not in the providers file: the instance is "
            "no longer read, repaired or deleted; add the provider back (the Proxy is read again "
            "at once), or delete the Proxy with annotation %s=true to leave the instance behind"
            % (proxy.made_by, provider_id, api.SKIP_CLEANUP_ANNOTATION)
        )
        before = step.status if step.status is not None else proxy.status
        status = dict(before)
        status["conditions"] = conditions.set_condition(
            status.get("conditions"),
            api.COND_READY,
            None,
            api.REASON_PROVIDER_NOT_CONFIGURED,
            message,
            proxy.generation,
            self._now(),
        )
        if status != before:
            step.status = status
        return step

    def _health_before_poll(self, proxy: Proxy, step: Step, health: Observation | None) -> None:
        """A new verdict of the health engine is written with the plan, before the poll it
        queued runs (an unhealthy proxy is not Ready while its instance is read)."""
        before = step.status if step.status is not None else proxy.status
        status, now = dict(before), self._now()
        events = self._probed(proxy, status, health, proxy.generation, now)
        ready = conditions.find(status.get("conditions"), api.COND_READY) or {}
        if status.get("state") == "Running" and ready.get("reason") in HEALTH_DECIDES:
            status["conditions"], _ready = _ready_of_running(status, proxy.generation, now)
        if status != before:
            step.status = status
            step.events.extend(events)

    def _plan_replacement(self, proxy: Proxy, step: Step) -> Step:
        """Delete the old instance on the provider that made it; create only once it is gone."""
        old, provider_id = proxy.made_by, proxy.status.get("providerID") or ""
        if old in self.configured:
            step.action = self._action(proxy, DELETE, PHASE_REPLACE, old, provider_id)
            return step
        if proxy.annotations.get(api.SKIP_CLEANUP_ANNOTATION) == "true":
            status = self._forget_instance(
                proxy, "old instance left behind (skip-cleanup); creating the replacement", proxy.generation
            )
            step.status, step.requeue_after = status, self.settings.requeue_now
            step.events.append(
                ("Warning", "CleanupSkipped", "left %s on provider %s behind" % (provider_id, old))
            )
            return step
        message = (
            "instance %s was made by provider %r, which is not in the providers file: add it back so "
            "the old instance can be deleted before its replacement is created (or set annotation %s=true "
            "to leave it behind)" % (provider_id, old, api.SKIP_CLEANUP_ANNOTATION)
        )
        status = self._with_ready(
            proxy, False, api.REASON_OLD_PROVIDER_NOT_CONFIGURED, message, proxy.generation
        )
        step.status, step.backoff = status, True
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
        provider = proxy.made_by
        if provider not in self.configured:
            if not provider_id:  # nothing can have been made on a provider the file does not have
                return Step(remove_finalizer=True)
            answer = Answer(
                ok=False,
                error_class=TRANSIENT,
                message="provider %r of %s is not in the providers file" % (provider, provider_id),
            )
            return self._deletion_retry(proxy, answer)
        # Without an id a create may still have run (a crash before its status write): the
        # module looks the instance up by name on that provider before saying it is gone.
        return Step(action=self._action(proxy, DELETE, PHASE_FINAL, provider, provider_id))

    # -- apply -------------------------------------------------------------------------

    def apply(self, proxy: Proxy, action: Action, answer: Answer, health: Observation | None = None) -> Step:
        """``proxy`` is the object now; ``action`` says which snapshot the answer is about;
        ``health`` the engine's latest observation of the key."""
        handler = {
            PHASE_CREATE: functools.partial(self._after_create, health=health),
            PHASE_POLL: functools.partial(self._after_poll, health=health),
            PHASE_RECYCLE: self._after_recycle,
            PHASE_REPLACE: self._after_replace,
            PHASE_FINAL: self._after_final,
        }[action.phase]
        if answer.error_class == PERMANENT and self.epochs.get(action.provider, 0) != action.config_epoch:
            answer = dataclasses.replace(
                answer,
                error_class=TRANSIENT,
                message="%s (the provider's configuration changed during the call: retrying)"
                % answer.message,
            )
        return handler(proxy, action, answer)

    @staticmethod
    def _generation(proxy: Proxy, action: Action) -> int:
        return action.generation or proxy.generation

    def _after_create(self, proxy, action, answer, health: Observation | None) -> Step:
        gen = self._generation(proxy, action)
        if answer.reason == api.REASON_SECRET_UNAVAILABLE:
            return self._secret_unavailable(proxy, answer, gen, ready=False)
        found = (answer.instance or {}).get("id") or ""
        if answer.error_class == PERMANENT and answer.reason == api.REASON_CREDENTIALS_FIXED and found:
            # An instance of this Proxy already exists with other credentials (created before a
            # crash, the Secret changed since): recorded, then replaced, never latched nor leaked.
            return self._replace_for_credentials(proxy, action, gen, found)
        if answer.error_class == PERMANENT and answer.reason == api.REASON_PORT_FIXED and found:
            # The instance was created (before a crash) with the port the spec had then.
            return self._replace_for_port(proxy, action, gen, found, answer.message)
        if not answer.ok:
            if answer.error_class == NOT_FOUND:  # NotFound inside create means "try again"
                answer = Answer(ok=False, error_class=TRANSIENT, message=answer.message)
            return self._failed(proxy, answer, "CreateFailed", gen)
        instance = answer.instance or {}
        status = dict(proxy.status)
        status.update(
            providerID=instance.get("id", ""),
            specHash=action.spec_hash or proxy.spec.hash(),
            provider=action.provider,
        )
        step = self._observed(proxy, status, instance, gen, health)
        step.events.append(
            ("Normal", "Created", "created %s on provider %s" % (instance.get("id"), action.provider))
        )
        if instance.get("state") != "Running":
            step.requeue_after = self.settings.requeue_now  # first poll soon; then provisioning_poll
        return step

    def _after_poll(self, proxy, action, answer, health: Observation | None) -> Step:
        gen = self._generation(proxy, action)
        if answer.reason == api.REASON_SECRET_UNAVAILABLE:  # it keeps serving its last credentials
            return self._secret_unavailable(proxy, answer, gen, ready=None)
        if answer.ok and (answer.instance or {}).get("state") != "absent":
            status = dict(proxy.status)
            status.setdefault("provider", action.provider)
            step = self._observed(proxy, status, answer.instance, gen, health)
            if action.op == CREATE and (answer.instance or {}).get("changed"):
                step.events.append(
                    (
                        "Normal",
                        "CredentialsRotated",
                        ROTATED_IN_PLACE % (action.provider_id, squid_conf.AUTH_TTL_SECONDS),
                    )
                )
            return step
        if _gone(answer):
            status = self._forget_instance(
                proxy, "instance %s is gone; creating it again" % action.provider_id, gen
            )
            return Step(
                status=status,
                requeue_after=self.settings.requeue_now,
                events=[("Warning", "InstanceLost", "%s not found; creating it again" % action.provider_id)],
            )
        if answer.error_class == PERMANENT and answer.reason == api.REASON_CREDENTIALS_FIXED:
            return self._replace_for_credentials(proxy, action, gen)
        if answer.error_class == PERMANENT and answer.reason == api.REASON_PORT_FIXED:
            return self._replace_for_port(proxy, action, gen, action.provider_id, answer.message)
        if answer.error_class in (QUOTA, PERMANENT):
            return self._failed(proxy, answer, "GetFailed", gen)
        # A slow or failed read says nothing about the proxy: Ready stays what it was.
        status = dict(proxy.status)
        status["conditions"] = conditions.set_condition(
            status.get("conditions"),
            api.COND_PROVIDER_REACHABLE,
            False,
            "GetFailed",
            "%s (retrying with backoff)" % answer.message,
            gen,
            self._now(),
        )
        status["observedGeneration"] = gen
        return Step(status=status, backoff=True)

    def _replace_for_credentials(self, proxy, action, gen: int, provider_id: str = "") -> Step:
        """The Secret's content changed and the instance cannot take it in place: mark the
        replacement in status (the next plan deletes, then creates with the new credentials).
        ``provider_id``: an instance a create found (made before a crash, with the old ones)."""
        provider_id = provider_id or action.provider_id
        message = (
            "the credentials of Secret %s changed and provider %s fixes them at creation: "
            "replacing %s" % (proxy.spec.auth_secret, action.provider, provider_id)
        )
        status = self._with_ready(proxy, False, "Replacing", message, gen)
        status.update(
            providerID=provider_id, provider=action.provider, specHash=api.SPEC_HASH_CREDENTIALS_CHANGED
        )
        status["conditions"] = conditions.set_condition(
            status["conditions"],
            api.COND_CREDENTIALS,
            False,
            api.REASON_CREDENTIALS_CHANGED,
            message,
            gen,
            self._now(),
        )
        return Step(
            status=status,
            requeue_after=self.settings.requeue_now,
            events=[("Normal", api.REASON_CREDENTIALS_CHANGED, message)],
        )

    def _replace_for_port(self, proxy, action, gen: int, provider_id: str, why: str) -> Step:
        """The instance listens on another port than the spec asks, and a port is fixed at
        creation: record it, marked for replacement (the next plan deletes, then creates)."""
        message = "%s listens on another port than spec.port %d: replacing it (%s)" % (
            provider_id,
            proxy.spec.port,
            why,
        )
        status = self._with_ready(proxy, False, "Replacing", message, gen)
        status.update(providerID=provider_id, provider=action.provider, specHash=api.SPEC_HASH_PORT_CHANGED)
        return Step(
            status=status,
            requeue_after=self.settings.requeue_now,
            events=[("Normal", "Replacing", message)],
        )

    def _after_recycle(self, proxy, action, answer) -> Step:
        gen = self._generation(proxy, action)
        if not answer.ok and not _gone(answer):
            return self._failed(proxy, answer, "DeleteFailed", gen)
        events = self._on_transition(
            proxy, "Recycling", ("Normal", "Recycling", "deleting stopped instance %s" % action.provider_id)
        )
        if _gone(answer):
            status = self._forget_instance(
                proxy, "instance %s stopped and was deleted; creating it again" % action.provider_id, gen
            )
            return Step(status=status, requeue_after=self.settings.requeue_now, events=events)
        status = self._with_ready(
            proxy, False, "Recycling", "instance %s stopped: deleting it" % action.provider_id, gen
        )
        return Step(status=status, requeue_after=self.settings.deletion_poll, events=events)

    def _after_replace(self, proxy, action, answer) -> Step:
        gen = self._generation(proxy, action)
        if not answer.ok and not _gone(answer):
            return self._failed(proxy, answer, "DeleteFailed", gen)
        why = (
            "credentials changed"
            if proxy.status.get("specHash") == api.SPEC_HASH_CREDENTIALS_CHANGED
            else "spec changed"
        )
        events = self._on_transition(
            proxy,
            "Replacing",
            ("Normal", "Replacing", "%s: replacing %s on %s" % (why, action.provider_id, action.provider)),
        )
        if _gone(answer):  # only now is the name free (and the old provider rid of it)
            status = self._forget_instance(
                proxy, "old instance gone; creating the replacement", gen, "Replacing"
            )
            return Step(status=status, requeue_after=self.settings.requeue_now, events=events)
        message = "%s: deleting %s on %s before creating its replacement" % (
            why,
            action.provider_id,
            action.provider,
        )
        status = self._with_ready(proxy, False, "Replacing", message, gen)
        return Step(status=status, requeue_after=self.settings.deletion_poll, events=events)

    def _after_final(self, proxy, action, answer) -> Step:
        if _gone(answer):
            what = action.provider_id or (answer.instance or {}).get("id") or action.name
            return Step(
                remove_finalizer=True,
                events=[("Normal", "Deleted", "instance %s is gone" % what)],
            )
        if answer.ok:  # deleted, still going away: look again
            return Step(requeue_after=self.settings.deletion_poll)
        return self._deletion_retry(proxy, answer)

    def _deletion_retry(self, proxy: Proxy, answer: Answer) -> Step:
        """Never latched while deleting; one CleanupFailed Event per distinct failure."""
        message = "%s (set annotation %s=true to release without cleanup)" % (
            answer.message,
            api.SKIP_CLEANUP_ANNOTATION,
        )
        previous = conditions.find(proxy.status.get("conditions"), api.COND_READY) or {}
        events = []
        if (previous.get("reason"), previous.get("message")) != ("CleanupFailed", message):
            events.append(("Warning", "CleanupFailed", message))
        status = self._with_ready(proxy, False, "CleanupFailed", message, proxy.generation)
        if answer.error_class == QUOTA:
            return Step(status=status, requeue_after=self.settings.quota_retry, events=events)
        return Step(status=status, backoff=True, events=events)

    # -- shared ------------------------------------------------------------------------

    def _secret_unavailable(self, proxy: Proxy, answer: Answer, gen: int, ready) -> Step:
        """CredentialsApplied=False, retried with backoff, never latched: the Secret may be
        created or fixed later, which changes no generation. ``ready=False``: nothing serves
        yet (a create); ``None``: Ready stays, the instance keeps its last credentials."""
        status = dict(proxy.status)
        now = self._now()
        previous = conditions.find(status.get("conditions"), api.COND_CREDENTIALS) or {}
        conds = conditions.set_condition(
            status.get("conditions"),
            api.COND_CREDENTIALS,
            False,
            api.REASON_SECRET_UNAVAILABLE,
            answer.message,
            gen,
            now,
        )
        if ready is False:
            conds = conditions.set_condition(
                conds, api.COND_READY, False, api.REASON_SECRET_UNAVAILABLE, answer.message, gen, now
            )
        status.update(conditions=conds, observedGeneration=gen)
        events = []
        if (previous.get("reason"), previous.get("message")) != (
            api.REASON_SECRET_UNAVAILABLE,
            answer.message,
        ):
            events.append(("Warning", api.REASON_SECRET_UNAVAILABLE, answer.message))
        return Step(status=status, backoff=True, events=events)

    @staticmethod
    def _on_transition(proxy: Proxy, reason: str, event: tuple) -> list:
        """``[event]`` when Ready's reason is not already ``reason``: one Event per transition."""
        ready = conditions.find(proxy.status.get("conditions"), api.COND_READY) or {}
        return [] if ready.get("reason") == reason else [event]

    def _with_ready(self, proxy: Proxy, value: bool, reason: str, message: str, gen: int) -> dict:
        status = dict(proxy.status)
        status["conditions"] = conditions.set_condition(
            status.get("conditions"), api.COND_READY, value, reason, message, gen, self._now()
        )
        status["observedGeneration"] = gen
        return status

    def _forget_instance(self, proxy, message: str, gen: int, reason: str = "Recreating") -> dict:
        """Status without the instance: the id is cleared only once the instance is gone, so
        the next plan creates (the same name) again. A new instance is probed afresh."""
        status = dict(proxy.status)
        status.update(providerID="", state="", ip="", observedGeneration=gen)
        status.pop("provider", None)
        conds = conditions.without(status.get("conditions"), api.COND_HEALTHY)
        status["conditions"] = conditions.set_condition(
            conds, api.COND_READY, False, reason, message, gen, self._now()
        )
        return status

    def _probed(self, proxy: Proxy, status: dict, health: Observation | None, gen: int, now: str) -> list:
        """Set ``status``'s Healthy from ``health`` when it is about the instance ``status``
        names (never another object's or an older instance's); returns the Unhealthy Event of
        a new unhealthy verdict."""
        if health is None or not health.about(proxy.uid, status, proxy.spec.port):
            return []
        before = conditions.find(proxy.status.get("conditions"), api.COND_HEALTHY) or {}
        healthy, reason, message = health.healthy, health.reason, health.message
        status["conditions"] = conditions.set_condition(
            status.get("conditions"), api.COND_HEALTHY, healthy, reason, message, gen, now
        )
        if health.healthy or (before.get("status"), before.get("reason")) == health.verdict():
            return []
        return [("Warning", "Unhealthy", health.message)]

    def _observed(self, proxy, status: dict, instance: dict, gen: int, health: Observation | None) -> Step:
        state = instance.get("state", "")
        status.update(
            state=state,
            ip=instance.get("ip", "") if state == "Running" else "",
            observedGeneration=gen,
        )
        if state != "Running":  # a new or restarted instance is probed afresh
            status["conditions"] = conditions.without(status.get("conditions"), api.COND_HEALTHY)
        now = self._now()
        probe_events = self._probed(proxy, status, health, gen, now)
        conds = status.get("conditions")
        conds = conditions.set_condition(conds, api.COND_QUOTA, False, "QuotaAvailable", "", gen, now)
        conds = conditions.set_condition(conds, api.COND_PERMANENT, False, "NoError", "", gen, now)
        conds = conditions.set_condition(conds, api.COND_PROVIDER_REACHABLE, True, "Answered", "", gen, now)
        if proxy.spec.auth_secret:
            message = "credentials of Secret %s applied" % proxy.spec.auth_secret
            conds = conditions.set_condition(conds, api.COND_CREDENTIALS, True, "Applied", message, gen, now)
        else:
            conds = conditions.without(conds, api.COND_CREDENTIALS)
        step = Step(events=probe_events)
        was_ready = conditions.is_true(proxy.status.get("conditions"), api.COND_READY)
        if state == "Running":
            conds, ready = _ready_of_running(dict(status, conditions=conds), gen, now)
            if not ready:  # the health engine saw this proxy fail: read it again soon
                step.requeue_after = self.settings.provisioning_poll
            else:
                step.requeue_after = self.settings.running_poll
                step.poll_round = status.get("provider") or proxy.spec.provider
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

    def _failed(self, proxy, answer: Answer, reason: str, gen: int) -> Step:
        status = dict(proxy.status)
        now = self._now()
        status["observedGeneration"] = gen
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
            return self._latch(proxy, Step(), reason, answer.message, gen)
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

    def _latch(
        self, proxy, step: Step, reason: str, message: str, gen: int, ready_reason: str = "PermanentError"
    ) -> Step:
        status = dict(proxy.status)
        now = self._now()
        status["conditions"] = conditions.set_condition(
            status.get("conditions"),
            api.COND_PERMANENT,
            True,
            reason,
            "%s. Fix the spec, the providers file or its credential files; nothing is retried until then."
            % message,
            gen,
            now,
        )
        status["conditions"] = conditions.set_condition(
            status["conditions"], api.COND_READY, False, ready_reason, message, gen, now
        )
        status["observedGeneration"] = gen
        step.status = status
        step.events.append(("Warning", "PermanentError", message))
        return step
