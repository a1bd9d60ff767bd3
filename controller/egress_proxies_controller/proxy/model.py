"""What the reconciler reads and returns: a Proxy snapshot, an action planned from it, the
answer to that action and the step to take. Plain data, so the table tests build them by hand.
"""

from __future__ import annotations

import dataclasses

from .. import api
from .spec import ProxySpec

CREATE, GET, DELETE = "create", "get", "delete"
NOT_FOUND, QUOTA, TRANSIENT, PERMANENT = "not_found", "quota_exceeded", "transient", "permanent"

# Why a call is made: decides how its answer is read.
PHASE_CREATE = "create"
PHASE_POLL = "poll"
PHASE_RECYCLE = "recycle"  # delete a Stopped/Terminated instance, then create again
PHASE_REPLACE = "replace"  # delete the old instance (on the provider that made it), then create
PHASE_FINAL = "final"  # the Proxy is being deleted: delete its instance, then release it

GONE_STATES = ("absent", "", None)  # what proxy_instance state=absent reports once get says NotFound


@dataclasses.dataclass(frozen=True)
class Settings:
    provisioning_poll: float = 10.0
    deletion_poll: float = 10.0
    requeue_now: float = 1.0
    quota_retry: float = 300.0
    running_poll: float = 60.0


@dataclasses.dataclass(frozen=True)
class Action:
    """One provider call and the snapshot it was planned from: its answer is read against that
    snapshot (generation, spec hash), never against whatever the object has become since."""

    op: str  # create | get | delete
    phase: str
    provider: str
    provider_id: str = ""
    name: str = ""
    uid: str = ""
    generation: int = 0
    spec_hash: str = ""
    resource_version: str = ""
    config_epoch: int = 0  # how many times its provider's configuration had changed when planned


@dataclasses.dataclass(frozen=True)
class Answer:
    """What the executor read back for one action."""

    ok: bool
    instance: dict | None = None  # id, name, uid, state (or "absent"), ip, created_at
    error_class: str = ""
    message: str = ""
    reason: str = ""  # why, when it is not the provider's answer (REASON_SECRET_UNAVAILABLE)


@dataclasses.dataclass
class Step:
    action: Action | None = None
    status: dict | None = None  # the full new status, when it changed
    add_finalizer: bool = False
    remove_finalizer: bool = False
    requeue_after: float | None = None
    poll_round: str = ""  # a Running poll: the provider whose poll round the requeue joins
    backoff: bool = False  # rate-limited requeue: an error that is neither quota nor permanent
    events: list = dataclasses.field(default_factory=list)  # (type, reason, message)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Snapshot:
    """The fields every reconciled object's snapshot has (a Proxy's, a ProxyPool's), read by
    ``object_fields``."""

    namespace: str
    name: str
    uid: str
    generation: int
    deleting: bool
    finalizers: tuple
    status: dict
    resource_version: str = ""


@dataclasses.dataclass(frozen=True)
class Proxy(Snapshot):
    """The parts of a Proxy object the reconciler reads."""

    annotations: dict
    spec: ProxySpec

    @classmethod
    def from_object(cls, obj: dict) -> Proxy:
        meta = obj.get("metadata") or {}
        return cls(
            **object_fields(obj),
            annotations=dict(meta.get("annotations") or {}),
            spec=ProxySpec.from_object(obj),
        )

    @property
    def key(self) -> str:
        return "%s/%s" % (self.namespace, self.name)

    @property
    def made_by(self) -> str:
        """The provider that made the current instance (status.provider; older status: the spec's)."""
        return self.status.get("provider") or self.spec.provider

    @property
    def latched(self) -> bool:
        """PermanentError is True: no provider call until the spec or its provider's configuration changes."""
        return any(
            c.get("type") == api.COND_PERMANENT and c.get("status") == "True"
            for c in self.status.get("conditions") or []
        )


def object_fields(obj: dict) -> dict:
    """A ``Snapshot``'s fields of ``obj``."""
    meta = obj.get("metadata") or {}
    return {
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "generation": int(meta.get("generation") or 0),
        "deleting": bool(meta.get("deletionTimestamp")),
        "finalizers": tuple(meta.get("finalizers") or ()),
        "status": dict(obj.get("status") or {}),
        "resource_version": str(meta.get("resourceVersion") or ""),
    }
