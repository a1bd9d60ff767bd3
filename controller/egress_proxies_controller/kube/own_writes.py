"""The versions of each Proxy the controller wrote itself, until its watch delivers them.

The controller never puts what it wrote into the informer's cache (the watch delivers it, as in
controller-runtime). It records each write's resourceVersion here instead, as ReplicaSet
expectations record creates in flight, for two answers:

- ``is_own``: a watch event of a version we wrote queues nothing (the reconcile that wrote it
  already decided what follows);
- ``behind``: a key planned while the cache still holds an older version than our last write
  would be decided from a state that no longer exists: it waits, and the event that brings the
  cache up to date (or the object's deletion) queues it again (``seen``).

A version of another object under the same name (a new uid) is never behind. The informer calls
``behind`` and ``seen`` under its cache lock, so a check and the cache it reads agree.
"""

from __future__ import annotations

import threading

from .object_ids import key_of, resource_version

#: the newest versions kept per key: a reconcile writes at most three (finalizer, status,
#: finalizer removal) before its watch events arrive
KEPT = 4


def _id(obj: dict) -> tuple:
    return key_of(obj), (obj.get("metadata") or {}).get("uid"), resource_version(obj)


class OwnWrites:
    def __init__(self):
        self._lock = threading.Lock()
        self._written: dict = {}  # key -> (uid, [resourceVersion, ...] oldest first)
        self._waiting: set = set()  # keys found behind, queued again once caught up

    def wrote(self, obj: dict) -> None:
        """Record the API server's answer to one of our writes."""
        key, uid, rv = _id(obj)
        with self._lock:
            old_uid, versions = self._written.get(key, (uid, []))
            kept = versions if old_uid == uid else []
            self._written[key] = (uid, [*kept, rv][-KEPT:])

    def is_own(self, obj: dict) -> bool:
        key, uid, rv = _id(obj)
        with self._lock:
            entry = self._written.get(key)
        return entry is not None and entry[0] == uid and rv in entry[1]

    def behind(self, key: str, cached: dict | None) -> bool:
        """Whether ``cached`` is older than our last write of the same object; a key found
        behind is remembered, and ``seen`` tells when it is no longer."""
        if cached is None:
            return False
        _key, uid, rv = _id(cached)
        with self._lock:
            entry = self._written.get(key)
            if entry is None or uid != entry[0] or rv >= entry[1][-1]:
                return False
            self._waiting.add(key)
        return True

    def seen(self, key: str, cached: dict | None) -> bool:
        """The cache of ``key`` changed to ``cached`` (None: gone); True when a key that waited
        may now be planned (caught up, replaced or gone)."""
        with self._lock:
            if cached is None:
                self._written.pop(key, None)
            if key not in self._waiting:
                return False
            entry = self._written.get(key)
            if entry is not None and cached is not None:
                _key, uid, rv = _id(cached)
                if uid == entry[0] and rv < entry[1][-1]:
                    return False
            self._waiting.discard(key)
        return True

    def forget(self, key: str) -> None:
        with self._lock:
            self._written.pop(key, None)
            self._waiting.discard(key)
