"""Leader election on a coordination.k8s.io Lease, so only one replica reconciles.

``acquire`` blocks until this process holds the Lease (or ``stop`` is set); a background thread
renews it and calls ``on_lost`` when a renewal has not succeeded within ``renew_deadline``: the
caller then stops working at once (controller-runtime exits; so do we).
"""

from __future__ import annotations

import datetime
import logging
import threading
import time

from kubernetes import client
from kubernetes.client.exceptions import ApiException

log = logging.getLogger("egress_proxies_controller.leader")


def _now():
    return datetime.datetime.now(datetime.UTC)


class LeaderElector:
    def __init__(
        self,
        coordination: client.CoordinationV1Api,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ):
        self.api = coordination
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = (
            lease_duration,
            renew_deadline,
            retry_period,
        )
        self.is_leader = threading.Event()

    def _try(self) -> bool:
        now = _now()
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=5)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = client.V1Lease(
                metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace),
                spec=client.V1LeaseSpec(
                    holder_identity=self.identity,
                    lease_duration_seconds=int(self.lease_duration),
                    acquire_time=now,
                    renew_time=now,
                    lease_transitions=0,
                ),
            )
            try:
                self.api.create_namespaced_lease(self.namespace, body, _request_timeout=5)
                return True
            except ApiException as exc2:
                if exc2.status == 409:
                    return False
                raise
        spec = lease.spec
        holder = spec.holder_identity
        renewed = spec.renew_time
        duration = spec.lease_duration_seconds or int(self.lease_duration)
        expired = renewed is None or (now - renewed).total_seconds() > duration
        if holder not in (None, "", self.identity) and not expired:
            return False
        if holder != self.identity:
            spec.acquire_time = now
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
        spec.holder_identity = self.identity
        spec.renew_time = now
        spec.lease_duration_seconds = int(self.lease_duration)
        try:
            self.api.replace_namespaced_lease(self.name, self.namespace, lease, _request_timeout=5)
            return True
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise

    def acquire(self, stop: threading.Event) -> bool:
        while not stop.is_set():
            try:
                if self._try():
                    log.info("acquired lease %s/%s as %s", self.namespace, self.name, self.identity)
                    self.is_leader.set()
                    return True
            except Exception as exc:
                log.warning("leader election: %s", exc)
            stop.wait(self.retry_period)
        return False

    def keep(self, stop: threading.Event, on_lost) -> threading.Thread:
        def renew_loop():
            last = time.monotonic()
            while not stop.wait(self.retry_period):
                try:
                    if self._try():
                        last = time.monotonic()
                        continue
                except Exception as exc:
                    log.warning("lease renewal failed: %s", exc)
                if time.monotonic() - last > self.renew_deadline:
                    self.is_leader.clear()
                    log.error("lost the lease %s/%s", self.namespace, self.name)
                    on_lost()
                    return

        thread = threading.Thread(target=renew_loop, name="lease-renew", daemon=True)
        thread.start()
        return thread

    def release(self) -> None:
        """Give the Lease up on clean shutdown so a standby takes over at once."""
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=5)
            if lease.spec.holder_identity == self.identity:
                lease.spec.holder_identity = ""
                lease.spec.lease_duration_seconds = 1
                self.api.replace_namespaced_lease(self.name, self.namespace, lease, _request_timeout=5)
        except Exception as exc:
            log.warning("releasing the lease: %s", exc)
