"""How the controller names a cached object and orders its versions: one definition for the
informer's cache and the own-write expectations (kube/own_writes.py), which must agree."""

from __future__ import annotations


def key_of(obj: dict) -> str:
    """The work queue's and the cache's key: ``namespace/name``."""
    meta = obj.get("metadata") or {}
    return "%s/%s" % (meta.get("namespace", ""), meta.get("name", ""))


def resource_version(obj: dict) -> int:
    """The object's resourceVersion as a number (0 when absent or not a number): the API
    server's are etcd revisions, so a larger one is a later write."""
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0
