"""The ProxyPool API's names and the parts of a pool and of its members the pool reconciler reads.

Plain data parsed from the objects, so the spread and rollout planners are pure functions that
the unit tests call with hand-built values.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import re

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from .. import api
from ..kube import conditions
from ..proxy.model import Snapshot, object_fields

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.pool_target import (
    DEFAULT_TARGET,
    Target,
)

POOL_PLURAL = "proxypools"
POOL_KIND = "ProxyPool"
POOL_FINALIZER = "crawl.example.com/pool-cleanup"
POOL_LABEL = "crawl.example.com/pool"  # on every member: the pool's name (the scale selector)
TARGET_LABEL = "crawl.example.com/pool-target"  # the spread target the member was made for
REVISION_LABEL = "crawl.example.com/pool-revision"  # hash of the member spec and rotation token
ROTATE_ANNOTATION = "crawl.example.com/rotate-now"  # any new value on the pool rolls every member

COND_PROGRESSING = "Progressing"
COND_SPREAD_DEGRADED = "SpreadDegraded"
COND_PUBLISHED = "Published"

_DURATION = re.compile(r"([0-9]+)([smh])")


def parse_duration(text: str) -> float:
    """Seconds of a Go-style duration made of s/m/h parts ('90s', '1h30m'); 0 for ''."""
    unit = {"s": 1, "m": 60, "h": 3600}
    return float(sum(int(n) * unit[u] for n, u in _DURATION.findall(text or "")))


def parse_time(stamp: str) -> float:
    """Epoch seconds of an RFC 3339 timestamp the API server wrote (0 when absent)."""
    if not stamp:
        return 0.0
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@dataclasses.dataclass(frozen=True)
class Pool(Snapshot):
    replicas: int
    template: dict
    targets: tuple
    max_age: float
    max_surge: object
    max_unavailable: object
    rotate_token: str

    @classmethod
    def from_object(cls, obj: dict) -> Pool:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        template = dict(spec.get("template") or {})
        strategy = spec.get("strategy") or {}
        spread = spec.get("spread") or []
        if spread:
            targets = tuple(
                Target(
                    t["name"],
                    t["provider"],
                    dict(t.get("placement") or {}),
                    int(t.get("weight", 1)),
                    None if t.get("max") is None else int(t["max"]),
                )
                for t in spread
            )
        else:
            targets = (Target(DEFAULT_TARGET, template.get("provider", ""), {}),)
        return cls(
            **object_fields(obj),
            replicas=int(spec.get("replicas", 1)),
            template=template,
            targets=targets,
            max_age=parse_duration(spec.get("maxAge") or ""),
            max_surge=strategy.get("maxSurge", "25%"),
            max_unavailable=strategy.get("maxUnavailable", "25%"),
            rotate_token=(meta.get("annotations") or {}).get(ROTATE_ANNOTATION, ""),
        )

    @property
    def selector(self) -> str:
        return "%s=%s" % (POOL_LABEL, self.name)

    def member_spec(self, target: Target, auth_secret: str = "") -> dict:
        """The Proxy spec of a member of ``target``: the template, the target's provider and
        its placement over the template's; with template.auth, ``auth_secret`` (the pool's copy
        of the credentials, pool_auth) in place of the user's Secret."""
        spec = {k: v for k, v in self.template.items() if k != "provider"}
        if auth_secret and spec.get("auth"):
            spec["auth"] = dict(spec["auth"], secretRef={"name": auth_secret})
        spec["provider"] = target.provider
        placement = dict(self.template.get("placement") or {})
        placement.update(target.placement)
        if placement:
            spec["placement"] = placement
        return spec

    def revision(self, target: Target, auth_secret: str = "") -> str:
        """What a member of ``target`` must carry to be current: its spec (with the credentials
        copy, whose name is a fingerprint of their content) and the rotation token."""
        doc = {"spec": self.member_spec(target, auth_secret), "rotate": self.rotate_token}
        canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class Member:
    """One member Proxy as the planners see it."""

    name: str
    target: str
    revision: str
    created: float  # epoch seconds (metadata.creationTimestamp)
    ready: bool
    deleting: bool = False
    failure: str = ""  # "PermanentError: <reason>: <message>" or "QuotaExceeded: ..." when latched
    ip: str = ""
    port: int = 3128
    provider: str = ""
    zone: str = ""
    auth_secret: str = ""  # the Secret its spec.auth names (the pool's copy, pool_auth)

    @classmethod
    def from_object(cls, obj: dict) -> Member:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        conds = status.get("conditions") or []
        failure = ""
        for cond_type in (api.COND_PERMANENT, api.COND_QUOTA):
            cond = conditions.find(conds, cond_type)
            if cond and cond.get("status") == "True":
                failure = "%s: %s" % (cond.get("reason") or cond_type, cond.get("message") or "")
                break
        deleting = bool(meta.get("deletionTimestamp"))
        return cls(
            name=meta.get("name", ""),
            target=labels.get(TARGET_LABEL, ""),
            revision=labels.get(REVISION_LABEL, ""),
            created=parse_time(meta.get("creationTimestamp") or ""),
            ready=conditions.is_true(conds, api.COND_READY) and bool(status.get("ip")) and not deleting,
            deleting=deleting,
            failure=failure,
            ip=status.get("ip") or "",
            port=int(spec.get("port") or 3128),
            provider=status.get("provider") or spec.get("provider") or "",
            zone=(spec.get("placement") or {}).get("zone") or "",
            auth_secret=((spec.get("auth") or {}).get("secretRef") or {}).get("name") or "",
        )


def _controller_ref(obj: dict) -> dict:
    """The ownerReference by which a ProxyPool controls ``obj``, or {}."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if (
            ref.get("controller")
            and ref.get("kind") == POOL_KIND
            and ref.get("apiVersion", "").startswith(api.GROUP + "/")
        ):
            return ref
    return {}


def owner_uid(obj: dict) -> str:
    """The UID of the ProxyPool that controls ``obj`` (its controller ownerReference), or ''."""
    return _controller_ref(obj).get("uid") or ""


def owner_key(obj: dict) -> str:
    """``namespace/name`` of the ProxyPool that controls ``obj`` (its queue key), or ''."""
    name = _controller_ref(obj).get("name")
    return "%s/%s" % ((obj.get("metadata") or {}).get("namespace", ""), name) if name else ""


def owner_reference(pool: Pool) -> dict:
    return {
        "apiVersion": "%s/%s" % (api.GROUP, api.VERSION),
        "kind": POOL_KIND,
        "name": pool.name,
        "uid": pool.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
