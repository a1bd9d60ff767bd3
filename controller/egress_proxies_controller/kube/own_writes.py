"""The versions of each object the controller wrote itself, until its watch delivers them.

The controller never puts what it wrote into the informer's cache (the watch delivers it, as in
controller-runtime). It records each write's answer here instead, as ReplicaSet expectations
record creates in flight, for two answers:

- ``is_own``: a watch event of a version we wrote queues nothing (the reconcile that wrote it
  already decided what follows);
- ``behind``: a key planned while the cache does not hold our last write yet would be decided
  from a state that no longer exists: it waits, and the event that brings the cache up to date
  (or the object's deletion) queues it again (``seen``).

resourceVersions are opaque (the Kubernetes API defines no order on them): they are only ever
compared for equality. "Newer" comes from the order of the watch instead. After our write of
version X the key is behind until the watch delivers X (an event before X in the watch's order
is older than our write; every one after X is newer), or the object is deleted or replaced by
another uid, or a relist that began after the write was answered brings the current state (a
list made after our write is never older than it). A write answered while a relist was in
flight stays behind until the watch delivers X: the watch starts at the list's version, so it
does deliver X when the list is older than X; the one case left waiting is a list newer than X
whose object nobody changes again.

The watch may deliver X before the write's answer is recorded (the watch runs on its own
thread): the last ``DELIVERED_KEPT`` versions delivered are remembered, so a write whose event
came first is not waited for.

An object of another uid under the same name is never behind. The informer calls ``behind``
and ``seen`` under its cache lock, so a check and the cache it reads agree.
"""

from __future__ import annotations

import collections
import itertools
import threading
from dataclasses import dataclass, field

from .object_ids import key_of, resource_version

#: the newest versions kept per key: a reconcile writes at most three (finalizer, status,
#: finalizer removal) before its watch events arrive
KEPT = 4
#: how many delivered (key, version) pairs are remembered for a write answered after its event
#: (a few hundred KiB; a write answered later than that many events waits for the next one)
DELIVERED_KEPT = 4096


@dataclass
class _Written:
    uid: str | None
    versions: list = field(default_factory=list)  # the versions we wrote, oldest first
    pending: str | None = None  # the last one, until the watch (or a later list) delivers it
    answered: int = 0  # the write counter when the last one was answered


def _id(obj: dict) -> tuple:
    return key_of(obj), (obj.get("metadata") or {}).get("uid"), resource_version(obj)


class OwnWrites:
    def __init__(self):
        self._lock = threading.Lock()
        self._written: dict = {}  # key -> _Written
        self._waiting: set = set()  # keys found behind, queued again once caught up
        self._counter = itertools.count(1)
        self._last = 0  # the counter of the last write answered
        self._delivered: collections.OrderedDict = collections.OrderedDict()  # (key, version), newest last

    def wrote(self, obj: dict) -> None:
        """Record the API server's answer to one of our writes."""
        key, uid, rv = _id(obj)
        with self._lock:
            entry = self._written.get(key)
            if entry is None or entry.uid != uid:
                entry = self._written[key] = _Written(uid)
            entry.versions = [*entry.versions, rv][-KEPT:]
            entry.pending = None if (key, rv) in self._delivered else rv
            self._last = entry.answered = next(self._counter)

    def list_started(self) -> int:
        """Mark the start of a list: every write answered before it is in what it returns."""
        with self._lock:
            return self._last

    def is_own(self, obj: dict) -> bool:
        key, uid, rv = _id(obj)
        with self._lock:
            entry = self._written.get(key)
        return entry is not None and entry.uid == uid and rv in entry.versions

    def behind(self, key: str, cached: dict | None) -> bool:
        """Whether the cache of ``key`` (``cached``; None: not there) has not yet got our last
        write of that object; a key found behind is remembered, and ``seen`` tells when it is
        no longer."""
        with self._lock:
            entry = self._written.get(key)
            if entry is None or entry.pending is None:
                return False
            if cached is not None:
                _key, uid, rv = _id(cached)
                if uid != entry.uid or rv == entry.pending:
                    return False
            self._waiting.add(key)
        return True

    def seen(self, key: str, cached: dict | None, listed_after: int | None = None) -> bool:
        """The cache of ``key`` changed to ``cached`` (None: gone) by a watch event, or by a
        list that began after the write numbered ``listed_after``; True when a key that waited
        may now be planned (caught up, replaced or gone)."""
        with self._lock:
            if cached is not None:
                self._delivered[(key, resource_version(cached))] = None
                while len(self._delivered) > DELIVERED_KEPT:
                    self._delivered.popitem(last=False)
            entry = self._written.get(key)
            if cached is None or entry is None:
                self._written.pop(key, None)
            else:
                _key, uid, rv = _id(cached)
                if uid != entry.uid:
                    del self._written[key]  # another object under that name: ours is gone
                elif rv == entry.pending or (listed_after is not None and entry.answered <= listed_after):
                    entry.pending = None
                if key in self._written and entry.pending is not None:
                    return False  # an event before our write, in the watch's order
            if key not in self._waiting:
                return False
            self._waiting.discard(key)
        return True

    def forget(self, key: str) -> None:
        with self._lock:
            self._written.pop(key, None)
            self._waiting.discard(key)
