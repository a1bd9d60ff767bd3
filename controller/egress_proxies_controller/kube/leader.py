"""Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does it.

``acquire`` blocks until this process holds the Lease (or ``stop`` is set). Whether another
holder's Lease has expired is judged by when THIS replica last saw its record change (holder,
renewTime, resourceVersion), never by comparing the remote renewTime with the local clock.
``keep`` renews every ``retry_period`` until told to stop, which the caller does only after all
work has drained. ``leading()`` is true only while the last successful renewal is younger than
``renew_deadline``; a watchdog calls ``on_lost`` (stop starting runs, cancel the ones in flight,
exit) as soon as that is no longer so, even while a renewal is still hanging on the network.
Each renewal touches ``heartbeat`` (a file), which the per-run watchdogs read: a run's
processes die with the lease even if this process is frozen (SIGSTOP) and cannot act.
``renew_deadline`` < ``lease_duration``, so they are dead before another replica can take over.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
import time

from . import credentials, errors
from .client import ApiException, client

log = logging.getLogger("egress_proxies_controller.kube.leader")
# What an operator does about a refusal of the Lease (said with its first occurrence).
HINTS = {
    403: " (grant the controller's ServiceAccount get, create and update on leases in that namespace, as "
    "controller/config/rbac/leader_election_role.yaml does, or set --leader-election-namespace)",
}


def _now():
    return datetime.datetime.now(datetime.UTC)


def new_lease(name: str, namespace: str, identity: str, duration: float, labels=None) -> client.V1Lease:
    """A Lease record held by ``identity`` from now (for a create)."""
    now = _now()
    return client.V1Lease(
        metadata=client.V1ObjectMeta(name=name, namespace=namespace, labels=labels),
        spec=client.V1LeaseSpec(
            holder_identity=identity,
            lease_duration_seconds=int(duration),
            acquire_time=now,
            renew_time=now,
            lease_transitions=0,
        ),
    )


def take(lease, identity: str, duration: float):
    """``lease`` rewritten as held by ``identity`` now (a renewal, or a takeover counted)."""
    spec, now = lease.spec, _now()
    if spec.holder_identity != identity:
        spec.acquire_time = now
        spec.lease_transitions = (spec.lease_transitions or 0) + 1
    spec.holder_identity = identity
    spec.renew_time = now
    spec.lease_duration_seconds = int(duration)
    return lease


def give_up(lease):
    """``lease`` rewritten as held by nobody, expiring at once: a standby takes it on its next look."""
    lease.spec.holder_identity = ""
    lease.spec.lease_duration_seconds = 1
    return lease


class LeaseTimes:
    """What every holder of Leases (the leader, the shard coordinator) keeps the same way: the
    three durations, the heartbeat file the per-run watchdogs read, and the local clock."""

    def __init__(
        self,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        heartbeat: str = "",
        clock=time.monotonic,
    ):
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("need retry_period < renew_deadline < lease_duration")
        self.lease_duration, self.renew_deadline, self.retry_period = (
            lease_duration,
            renew_deadline,
            retry_period,
        )
        self.heartbeat = heartbeat
        self._clock = clock

    def _request_timeout(self, left: float | None) -> float:
        """A request never outlives the renew deadline (``left`` of it; None: nothing held yet)."""
        if left is None:
            return self.retry_period * 2
        return max(0.2, min(self.retry_period * 2, left))

    def _beat(self) -> None:
        """Touch the heartbeat file (when there is one): the runs' watchdogs see the Lease renewed."""
        if self.heartbeat:
            with open(self.heartbeat, "w") as handle:
                handle.write("%f\n" % time.time())
            os.utime(self.heartbeat)


class LeaderElector(LeaseTimes):
    def __init__(
        self, coordination: client.CoordinationV1Api, namespace: str, name: str, identity: str, **times
    ):
        super().__init__(**times)
        self.api = coordination
        self.namespace, self.name, self.identity = namespace, name, identity
        self.is_leader = threading.Event()
        self._observed = None  # (holder, renewTime, resourceVersion) last seen
        self._observed_at = 0.0  # local monotonic time it was first seen
        self._renewed_at = None  # local monotonic time of our last successful acquire/renew
        self._lost = threading.Event()
        self._refused = threading.Event()  # the API server refused our credentials (401)

    # -- one attempt -------------------------------------------------------------------

    def _timeout(self) -> float:
        if self._renewed_at is None:
            return self._request_timeout(None)
        return self._request_timeout(self.renew_deadline - (self._clock() - self._renewed_at))

    def _expired(self, lease) -> bool:
        spec = lease.spec
        record = (spec.holder_identity, str(spec.renew_time), lease.metadata.resource_version)
        now = self._clock()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = spec.lease_duration_seconds or self.lease_duration
        return now - self._observed_at > duration

    def _try(self) -> bool:
        started = self._clock()
        timeout = self._timeout()
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=timeout)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return self._create(started, timeout)
        spec = lease.spec
        holder = spec.holder_identity
        if holder not in (None, "", self.identity) and not self._expired(lease):
            return False
        take(lease, self.identity, self.lease_duration)
        return self._write(
            lambda: self.api.replace_namespaced_lease(
                self.name, self.namespace, lease, _request_timeout=timeout
            ),
            started,
        )

    def _create(self, started: float, timeout: float) -> bool:
        body = new_lease(self.name, self.namespace, self.identity, self.lease_duration)
        return self._write(
            lambda: self.api.create_namespaced_lease(self.namespace, body, _request_timeout=timeout), started
        )

    def _write(self, write, started: float) -> bool:
        """One write of the Lease record: False when another replica wrote it first (409)."""
        try:
            write()
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        self._renewed(started)
        return True

    def _renewed(self, started: float) -> None:
        # Counted from when the attempt started: the record may have been written any time after.
        self._renewed_at = started
        self._beat()

    # -- the loops ---------------------------------------------------------------------

    def leading(self) -> bool:
        """True while the last successful renewal is younger than the renew deadline."""
        return (
            self.is_leader.is_set()
            and not self._lost.is_set()
            and not self._refused.is_set()
            and self._renewed_at is not None
            and self._clock() - self._renewed_at < self.renew_deadline
        )

    def acquire(self, stop: threading.Event) -> bool:
        """True once held; False when ``stop`` is set first. Raises ``CredentialsRefused`` on a
        401: waiting would only repeat it (kube/credentials.py logs it once)."""
        said = ""  # the last failure logged: the same one again is the same problem, said once
        while not stop.is_set():
            try:
                if self._try():
                    log.info("acquired lease %s/%s as %s", self.namespace, self.name, self.identity)
                    self.is_leader.set()
                    return True
            except Exception as exc:
                if credentials.refused(exc):
                    raise credentials.CredentialsRefused(credentials.MESSAGE) from None
                failure = errors.describe(exc)
                if failure != said:
                    log.warning(
                        "leader election: lease %s/%s: %s; retrying every %gs%s",
                        self.namespace,
                        self.name,
                        failure,
                        self.retry_period,
                        HINTS.get(getattr(exc, "status", None), ""),
                    )
                    said = failure
            stop.wait(self.retry_period)
        return False

    def keep(self, stop: threading.Event, on_lost) -> threading.Thread:
        """Renew until ``stop`` is set (after the drain); ``on_lost`` once leading() turns False."""

        def renew_loop():
            while not stop.wait(self.retry_period) and not self._lost.is_set():
                try:
                    if not self._try():
                        log.warning("lease %s/%s: renewal refused", self.namespace, self.name)
                except Exception as exc:
                    if credentials.refused(exc):  # no renewal can succeed: lost at once
                        self._refused.set()
                        return
                    log.warning("lease renewal failed: %s", errors.describe(exc))

        def watchdog():
            while not stop.wait(0.1):
                if not self.leading():
                    self._lost.set()
                    self.is_leader.clear()
                    log.error(
                        "lost the lease %s/%s (%s)",
                        self.namespace,
                        self.name,
                        "the API server refused our credentials"
                        if self._refused.is_set()
                        else "no renewal within %.0fs" % self.renew_deadline,
                    )
                    on_lost()
                    return

        threading.Thread(target=watchdog, name="lease-watchdog", daemon=True).start()
        thread = threading.Thread(target=renew_loop, name="lease-renew", daemon=True)
        thread.start()
        return thread

    def release(self) -> None:
        """Give the Lease up on clean shutdown so a standby takes over at once."""
        if not self.leading():
            return  # not ours to give any more
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=5)
            if lease.spec.holder_identity == self.identity:
                self.api.replace_namespaced_lease(
                    self.name, self.namespace, give_up(lease), _request_timeout=5
                )
        except Exception as exc:
            log.warning("releasing the lease: %s", errors.describe(exc))
