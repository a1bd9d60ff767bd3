"""Provider answers on their way back to the queue: key -> (action, answer, trace), taken once.

The batcher puts each answer here and then queues its key (an event, as a watch event is); the
key's next reconcile takes it and applies it to the object it reads. An answer about another
object (the Proxy deleted and made again under its name: another uid) is dropped unread.
``trace`` is the answering run's span context (its status write is traced as the run's child). Nothing
here outlives the process and nothing needs to: a restart kills the runs too, and the next
reconcile plans afresh (the modules' create and delete are idempotent by uid).
"""

from __future__ import annotations

import threading


class Mailbox:
    def __init__(self):
        self._lock = threading.Lock()
        self._answers: dict = {}  # key -> (action, answer, trace)

    def __len__(self) -> int:
        with self._lock:
            return len(self._answers)

    def waiting(self) -> list:
        """The keys with an answer not taken yet."""
        with self._lock:
            return list(self._answers)

    def put(self, key: str, action, answer, trace=None) -> None:
        with self._lock:
            self._answers[key] = (action, answer, trace)

    def take(self, key: str, uid: str):
        """The (action, answer, trace) for ``key`` when it is about the object ``uid``; removed either way."""
        with self._lock:
            entry = self._answers.pop(key, None)
        if entry is None or entry[0].uid != uid:
            return None
        return entry

    def drop(self, key: str) -> None:
        with self._lock:
            self._answers.pop(key, None)
