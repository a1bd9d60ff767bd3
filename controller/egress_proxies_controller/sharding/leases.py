"""Sharding across replicas on coordination.k8s.io Leases (``--shards N`` with N > 1).

Every replica renews a membership Lease of its own (``<id>-member-<identity>``); the live
members are the holders of the membership Leases whose record this replica saw change within
their lease duration (the rule of kube/leader.py: never the remote renewTime against the local
clock). Shards go to the live members by shards.assign, so every replica computes the same
assignment. A replica takes the shard Leases (``<id>-shard-<i>``) assigned to it once they are
free or expired, and renews them every ``retry_period``. A shard no longer assigned to it is
first marked releasing (no key of it is dispatched any more), then given up (holderIdentity
cleared) only once ``busy(shard)`` says no batch, run or GC sweep holding it is left, so the new
owner takes it at once and never overlaps.

A held shard whose last renewal is older than ``renew_deadline`` is fatal as a lost leader
Lease is: ``on_lost`` (abort every run, exit). The heartbeat file the per-run watchdogs read is
touched only after a round that renewed every held shard, so it stops with any of them.
"""

from __future__ import annotations

import logging
import re
import threading

from prometheus_client import Counter, Gauge

from ..kube import errors
from ..kube.client import ApiException, client
from ..kube.leader import LeaseTimes, give_up, new_lease, take
from . import assignment as shards_mod

log = logging.getLogger("egress_proxies_controller.sharding.leases")
GROUP_LABEL = "egress-proxies.crawl.example.com/lease-group"
ROLE_LABEL = "egress-proxies.crawl.example.com/lease-role"


def dns_label(text: str, limit: int) -> str:
    """``text`` as a DNS-1123 name part (identities carry ``_``; Lease names must not)."""
    cleaned = re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-.")
    return cleaned[:limit].strip("-.") or "x"


class ShardMetrics:
    def __init__(self, registry):
        self.held = Gauge(
            "egress_proxies_shard_held",
            "1 for each shard whose Lease this replica holds.",
            ["shard"],
            registry=registry,
        )
        self.handovers = Counter(
            "egress_proxies_shard_handovers_total",
            "Shard Leases this replica took (acquired) or gave up (released).",
            ["direction"],
            registry=registry,
        )


class ShardCoordinator(LeaseTimes):
    def __init__(
        self,
        coordination: client.CoordinationV1Api,
        namespace: str,
        lease_id: str,
        identity: str,
        count: int,
        *,
        registry=None,
        on_acquired=lambda shard: None,
        busy=lambda shard: False,
        **times,
    ):
        super().__init__(**times)
        self.api, self.namespace, self.lease_id, self.identity = coordination, namespace, lease_id, identity
        self.count = count
        self.on_acquired, self.busy = on_acquired, busy
        self.metrics = ShardMetrics(registry) if registry is not None else None
        self.group = dns_label(lease_id, 63)
        self.member_name = "%s-member-%s" % (lease_id, dns_label(identity, 240 - len(lease_id)))
        self._lock = threading.Lock()
        self._held = {}  # shard -> local monotonic start of the round that last renewed it
        self._releasing = set()  # held shards no longer assigned: nothing of them dispatched
        self._observed = {}  # lease name -> (record, local monotonic time first seen)
        self.members: list = []
        self.assigned: set = set()
        self.rounds = 0
        self._member_at = None  # local monotonic start of the round that last renewed membership
        self._lost = threading.Event()
        self._stop = threading.Event()

    # -- what the rest of the controller asks ------------------------------------------

    def shard_name(self, shard: int) -> str:
        return "%s-shard-%d" % (self.lease_id, shard)

    def dispatching(self, shard: int) -> bool:
        """True while this replica holds ``shard`` and is not giving it up: its keys may run."""
        with self._lock:
            return shard in self._held and shard not in self._releasing and not self._lost.is_set()

    def owned(self) -> set:
        with self._lock:
            return set(self._held) - self._releasing if not self._lost.is_set() else set()

    def healthy(self) -> bool:
        """False once any held shard went unrenewed past the renew deadline (no run may start)."""
        if self._lost.is_set():
            return False
        now = self._clock()
        with self._lock:
            return all(now - at < self.renew_deadline for at in self._held.values())

    def settled(self) -> bool:
        """/readyz: a round has run and this replica holds exactly the shards assigned to it."""
        with self._lock:
            return self.rounds > 0 and set(self._held) == self.assigned and not self._releasing

    # -- Lease records -------------------------------------------------------------------

    def _timeout(self) -> float:
        now = self._clock()
        with self._lock:
            left = min((self.renew_deadline - (now - at) for at in self._held.values()), default=None)
        return self._request_timeout(left)

    def _expired(self, lease) -> bool:
        spec = lease.spec
        record = (spec.holder_identity, str(spec.renew_time), lease.metadata.resource_version)
        now = self._clock()
        seen = self._observed.get(lease.metadata.name)
        if seen is None or seen[0] != record:
            self._observed[lease.metadata.name] = seen = (record, now)
        return now - seen[1] > (spec.lease_duration_seconds or self.lease_duration)

    def _list(self, role: str, timeout: float) -> dict:
        selector = "%s=%s,%s=%s" % (GROUP_LABEL, self.group, ROLE_LABEL, role)
        items = self.api.list_namespaced_lease(
            self.namespace, label_selector=selector, _request_timeout=timeout
        ).items
        return {lease.metadata.name: lease for lease in items}

    def _hold(self, name: str, role: str, lease, timeout: float) -> bool:
        """Write ourselves as holder (create when absent); False when another write came first."""
        try:
            if lease is None:
                labels = {GROUP_LABEL: self.group, ROLE_LABEL: role}
                body = new_lease(name, self.namespace, self.identity, self.lease_duration, labels)
                self.api.create_namespaced_lease(self.namespace, body, _request_timeout=timeout)
                return True
            take(lease, self.identity, self.lease_duration)
            self.api.replace_namespaced_lease(name, self.namespace, lease, _request_timeout=timeout)
            return True
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise

    # -- one round -----------------------------------------------------------------------

    def _live_members(self, leases: dict, renewed: bool) -> list:
        live = {self.identity} if renewed else set()
        for name, lease in leases.items():
            holder = lease.spec.holder_identity
            if name == self.member_name or not holder:
                continue
            if not self._expired(lease):
                live.add(holder)
        return sorted(live)

    def round(self) -> None:
        """Renew membership and held shards, recompute the assignment, take and give up shards."""
        started = self._clock()
        timeout = self._timeout()
        members = self._list("member", timeout)
        try:
            if self._hold(self.member_name, "member", members.get(self.member_name), timeout):
                self._member_at = started
        except Exception as exc:
            log.warning("membership lease %s: %s", self.member_name, errors.describe(exc))
        # One failed write of our own membership (a 409 after a lost reply) must not make us give
        # every shard away: we count as a member while our last renewal is within the deadline.
        renewed = self._member_at is not None and started - self._member_at < self.renew_deadline
        self.members = self._live_members(members, renewed)
        assigned = shards_mod.owned_by(self.count, self.members, self.identity)
        leases = self._list("shard", timeout)
        all_renewed = True
        for shard in range(self.count):
            name = self.shard_name(shard)
            lease = leases.get(name)
            expired = lease is not None and self._expired(lease)
            with self._lock:
                held = shard in self._held
                if held and shard in assigned:
                    self._releasing.discard(shard)
                elif held:
                    self._releasing.add(shard)  # from now on none of its keys is dispatched
            try:
                if held:
                    if shard not in assigned and not self.busy(shard):
                        self._release(shard, lease, timeout)
                        continue
                    if lease is None or lease.spec.holder_identity != self.identity:
                        log.error("shard lease %s is no longer ours", name)
                        all_renewed = False
                        continue
                    if self._hold(name, "shard", lease, timeout):
                        with self._lock:
                            self._held[shard] = started
                    else:
                        all_renewed = False
                elif shard in assigned:
                    holder = lease.spec.holder_identity if lease is not None else ""
                    if (not holder or expired) and self._hold(name, "shard", lease, timeout):
                        with self._lock:
                            self._held[shard] = started
                        log.info("acquired shard lease %s/%s (was %r)", self.namespace, name, holder)
                        if self.metrics is not None:
                            self.metrics.held.labels(str(shard)).set(1)
                            self.metrics.handovers.labels("acquired").inc()
                        self.on_acquired(shard)
            except Exception as exc:
                all_renewed = all_renewed and not held
                log.warning("shard lease %s: %s", name, errors.describe(exc))
        with self._lock:
            self.assigned = assigned
            self.rounds += 1
        if all_renewed:
            self._beat()
        self._collect_members(members)

    def _release(self, shard: int, lease, timeout: float) -> None:
        name = self.shard_name(shard)
        with self._lock:
            self._held.pop(shard, None)
            self._releasing.discard(shard)
        if self.metrics is not None:
            self.metrics.held.labels(str(shard)).set(0)
            self.metrics.handovers.labels("released").inc()
        if lease is not None and lease.spec.holder_identity == self.identity:
            self.api.replace_namespaced_lease(name, self.namespace, give_up(lease), _request_timeout=timeout)
        log.info("released shard lease %s/%s (assigned elsewhere now)", self.namespace, name)

    def _collect_members(self, members: dict) -> None:
        """Delete membership Leases expired for twice their duration (replicas gone for good)."""
        now = self._clock()
        for name, lease in members.items():
            seen = self._observed.get(name)
            if name == self.member_name or seen is None:
                continue
            if now - seen[1] > 2 * (lease.spec.lease_duration_seconds or self.lease_duration):
                try:
                    self.api.delete_namespaced_lease(
                        name,
                        self.namespace,
                        body=client.V1DeleteOptions(
                            preconditions=client.V1Preconditions(
                                resource_version=lease.metadata.resource_version
                            )
                        ),
                        _request_timeout=self._timeout(),
                    )
                    self._observed.pop(name, None)
                except ApiException as exc:
                    if exc.status not in (404, 409):
                        log.warning(
                            "deleting the expired membership lease %s: %s", name, errors.describe(exc)
                        )

    # -- the loops -----------------------------------------------------------------------

    def start(self, on_lost) -> None:
        def rounds():
            while not self._stop.is_set() and not self._lost.is_set():
                started = self._clock()
                try:
                    self.round()
                except Exception as exc:
                    log.warning("shard round: %s", errors.describe(exc))
                took = self._clock() - started
                if took > self.retry_period:
                    log.warning("shard round took %.1fs (retry period %.1fs)", took, self.retry_period)
                self._stop.wait(self.retry_period)

        def watchdog():
            while not self._stop.wait(0.1):
                if not self.healthy():
                    self._lost.set()
                    log.error("lost a shard lease (no renewal within %.0fs)", self.renew_deadline)
                    on_lost()
                    return

        threading.Thread(target=watchdog, name="shard-watchdog", daemon=True).start()
        self._thread = threading.Thread(target=rounds, name="shard-rounds", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """On clean shutdown (after the drain): give every held shard and the membership up."""
        self._stop.set()
        self._thread.join(self._timeout() + 5)
        if not self.healthy():
            return  # not ours to give any more
        try:
            leases = self._list("shard", 5)
            for shard in sorted(self._held):
                self._release(shard, leases.get(self.shard_name(shard)), 5)
            self.api.delete_namespaced_lease(self.member_name, self.namespace, _request_timeout=5)
        except Exception as exc:
            log.warning("releasing the shard leases: %s", errors.describe(exc))
