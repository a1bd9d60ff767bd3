"""Which Proxies each ProxyPool controls, kept as the Proxy informer's cache changes.

The pool loop is driven by events: a member's change (its status too: Ready, a failure, its
deletion) puts its pool's key on the pool queue, and a reconcile reads only that pool's members
from here instead of scanning every cached Proxy. Keys are indexed by the controller
ownerReference's name (``pool_model.owner_key``); the reconcile still checks each member's owner
UID, so a pool deleted and made again under the same name never counts its predecessor's.
"""

from __future__ import annotations

import threading

from .model import owner_key


class MemberIndex:
    def __init__(self):
        self._lock = threading.Lock()
        self._members: dict = {}  # pool key -> set of member Proxy keys

    def changed(self, key: str, old: dict | None, new: dict | None) -> list:
        """Record one Proxy's change (``new`` None: gone); returns the pool keys it concerns."""
        before = owner_key(old) if old else ""
        after = owner_key(new) if new else ""
        with self._lock:
            if before and before != after:
                keys = self._members.get(before)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._members[before]
            if after:
                self._members.setdefault(after, set()).add(key)
        return [p for p in dict.fromkeys((before, after)) if p]

    def of(self, pool_key: str) -> list:
        """The keys of the Proxies controlled by the pool under ``pool_key``."""
        with self._lock:
            return sorted(self._members.get(pool_key, ()))
