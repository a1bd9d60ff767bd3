"""Answers a status write could not record yet, kept for the key's next reconcile.

A provider's answer (an instance created, a poll, a delete) is applied to the Proxy as the
reconcile read it (its one snapshot), guarded by that resourceVersion. When someone wrote the object in the
meantime (409), the answer is not re-applied to a fresh copy in the same breath: it is filed here
under the key with the action it answers (uid, generation, resourceVersion) and the key is simply
requeued, as controller-runtime does; the next reconcile reads the object once and applies the
filed answer to that snapshot before planning anything (so a create's answer is never lost and
never asked for twice). An answer filed for another object (the Proxy deleted and made again
under its name: another uid) is dropped unread.
"""

from __future__ import annotations

import threading


class FiledAnswers:
    def __init__(self):
        self._lock = threading.Lock()
        self._filed: dict = {}  # key -> (action, answer)

    def __len__(self) -> int:
        with self._lock:
            return len(self._filed)

    def file(self, key: str, action, answer) -> None:
        with self._lock:
            self._filed[key] = (action, answer)

    def take(self, key: str, obj: dict):
        """The (action, answer) filed for ``obj``'s key, if it is about this very object (its
        uid); removed either way."""
        with self._lock:
            filed = self._filed.pop(key, None)
        if filed is None or (obj.get("metadata") or {}).get("uid") != filed[0].uid:
            return None
        return filed

    def forget(self, key: str) -> None:
        with self._lock:
            self._filed.pop(key, None)
