"""How the controller names a cached object and its version: one definition for the informer's
cache and the own-write expectations (kube/own_writes.py), which must agree."""

from __future__ import annotations


def key_of(obj: dict) -> str:
    """The work queue's and the cache's key: ``namespace/name``."""
    meta = obj.get("metadata") or {}
    return "%s/%s" % (meta.get("namespace", ""), meta.get("name", ""))


def resource_version(obj: dict) -> str:
    """The object's resourceVersion as the API server sent it ("" when absent). The API defines
    it as opaque: compare it for equality only, never for order (kube/own_writes.py)."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
