"""What the health engine last saw of each Proxy's instance: the engine records, the reconcile reads.

The engine never writes status (two writers of ``Ready`` would race and each undo the other's
decision): it records each probe here and queues the key when what status says would change.
An observation names the instance it probed (the Proxy's uid, its providerID, ip and port), so
the reconcile applies it only to the object and instance it is about: never to a Proxy deleted
and created again under the same name, nor to an instance that moved or was replaced at another
address. The store holds one observation per key, for the keys the engine still probes; the
reconcile forgets a key's once it writes that the instance is not Running, so a Squid recreated
under the same name, id and address starts with no verdict, as it did before the store.
"""

from __future__ import annotations

import dataclasses
import threading


@dataclasses.dataclass(frozen=True)
class Observation:
    uid: str
    provider_id: str
    ip: str
    port: int
    healthy: bool
    reason: str
    message: str

    @property
    def instance(self) -> tuple:
        return (self.uid, self.provider_id, self.ip, self.port)

    def about(self, uid: str, status: dict, port: int) -> bool:
        """Is this the instance ``status`` says runs for the Proxy ``uid`` on ``port``?"""
        return status.get("state") == "Running" and self.instance == (
            uid,
            status.get("providerID") or "",
            status.get("ip") or "",
            port,
        )

    def verdict(self) -> tuple:
        """What status would say of it: Healthy's status and reason (a new message alone is no change)."""
        return ("True" if self.healthy else "False", self.reason)


class HealthObservations:
    def __init__(self):
        self._lock = threading.Lock()
        self._latest: dict = {}  # key -> Observation

    def record(self, key: str, observation: Observation) -> bool:
        """Keep ``observation`` as the key's latest; True when its verdict is new for that
        instance (the first one, or a flip), so the caller queues the key once per change."""
        with self._lock:
            previous = self._latest.get(key)
            self._latest[key] = observation
        return (
            previous is None
            or previous.instance != observation.instance
            or previous.verdict() != observation.verdict()
        )

    def latest(self, key: str) -> Observation | None:
        with self._lock:
            return self._latest.get(key)

    def forget(self, key: str) -> None:
        """The key's instance stopped or went away: what was seen of it applies to no other."""
        with self._lock:
            self._latest.pop(key, None)

    def retain(self, keys) -> None:
        """Forget every key but ``keys`` (the engine's targets: a Proxy no longer Running, or
        gone, has nothing to apply)."""
        keep = set(keys)
        with self._lock:
            for key in [k for k in self._latest if k not in keep]:
                del self._latest[key]
