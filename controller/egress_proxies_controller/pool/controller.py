"""The ProxyPool reconciler: keeps a pool's member Proxies as a ReplicaSet keeps its Pods.

Driven by events, on a queue of its own (``due``): a pool is reconciled when it changes (its
informer), when one of its members changes (the Proxy informer's watchers: ``members``
keeps each pool's members, status included), when what it publishes changes (the Service and
EndpointSlice informers), when the providers file's names change (every pool), when its auth
Secret changed (Secrets are not watched: ``_check_auth_secrets`` asks with one metadata-only
read per ``auth_recheck``), and at the times a pool must act with no event (``_next_check``: a
member reaching maxAge, a skipped target's retry, a ``resync`` safety net). A round (every
``interval``, 1 s) takes the pools due and compares each with its members only; with nothing
changed it reads nothing but those auth Secrets' versions. Members are created with generated
names, the pool label, their target and revision labels and a controller ownerReference to the
pool; members are deleted (UID precondition) when scaled down, rotated or rolled; the Ready ones
are published (publish.py); the status and Events are written. The existing Proxy reconciler does all
instance work: a member is an ordinary Proxy.

Nothing is written into an informer's cache: a member created or deleted is expected
(expectations.py) and the pool is not planned again until the Proxy informer has seen it (no
double creates); the pool's own writes come back through its watch, and so do its members to
the Proxy controller (their events queue them there: no list of keys is handed over). What a
pool does next is decided from one snapshot (decision.py, pure): the pool, its members and what
it publishes, all from informer caches (the Secrets aside); this file carries it out. A write
that meets a newer object (409) raises ``Conflict`` and the pool is requeued. A target is skipped
while its provider is not in the providers file, or for ``target_retry`` seconds after one of
its current members latched PermanentError or QuotaExceeded (it keeps every member that has
not failed, Ready or still Provisioning, and only the failed ones go; the rest of its share
goes to the other targets). The pool's finalizer holds it until every member is gone, so
deleting a pool deletes every member, and through their finalizers every instance.
"""

from __future__ import annotations

import logging
import time

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from .. import api
from ..kube import conditions, errors
from ..kube.client import Conflict
from ..kube.informer import Informer, key_of
from ..kube.workqueue import WorkQueue
from ..loops.periodic import PeriodicLoop
from . import rollout
from . import status as pool_status
from .auth import PoolAuth, source_name
from .decision import decide, member_body
from .expectations import Expectations
from .kube_calls import PoolKube
from .members import MemberIndex
from .model import (
    POOL_FINALIZER,
    POOL_KIND,
    Member,
    Pool,
    owner_key,
    owner_uid,
    parse_time,
)
from .publish import Publisher

# isort: split

log = logging.getLogger("egress_proxies_controller.pool")
#: the Events of what a tick did, sent even when its status write failed
ACTIONS = ("MemberDeleted", "MembersCreated")


def _ignore(_key: str) -> None:
    """The published objects' informers queue their pools through a watcher (which sees the
    object, and so its owner), not through ``on_change`` (which sees only its key)."""


def _reason(exc: Exception) -> str:
    return getattr(exc, "reason", "") or type(exc).__name__


class PoolController(PeriodicLoop):
    name = "pools"

    def __init__(
        self,
        kube,
        proxy_informer,
        configured,
        metrics,
        namespace: str | None,
        *,
        interval: float = 1.0,
        resync: float = 300.0,
        auth_recheck: float = 5.0,
        target_retry: float = 300.0,
        expectation_ttl: float = 300.0,
        may_act=lambda: True,
        clock=time.time,
    ):
        super().__init__(interval)
        self.kube = kube
        self.pools = PoolKube(kube)
        self.proxies = proxy_informer
        self.configured = configured  # () -> the providers file's names in use (None: none yet)
        self.metrics = metrics  # PoolMetrics
        self.resync = resync
        self.auth_recheck = auth_recheck
        self.target_retry = target_retry
        self.may_act = may_act
        self.clock = clock
        self.due = WorkQueue(base_delay=1.0, max_delay=60.0)  # pool keys, fed by events
        self.auth_checks = WorkQueue()  # keys of auth pools: when to ask if their Secret changed
        self.members = MemberIndex()
        self.expectations = Expectations(expectation_ttl)
        self._index_cached(proxy_informer)
        self.informer = Informer(
            kube, namespace, self.due.add, lister=self.pools.list_pools, resource="proxypools"
        )
        # What the pools publish, by kind, watched by the pool label (their Secrets cannot be:
        # that would take listing every Secret of the namespace); each informer named by its
        # resource, as RBAC is. The Publisher reads them from these caches, never with a get.
        self.published = {
            kind: Informer(kube, namespace, _ignore, lister=lister, resource=resource)
            for kind, resource, lister in (
                ("Service", "services", self.pools.list_services),
                ("EndpointSlice", "endpointslices", self.pools.list_endpoint_slices),
            )
        }
        for informer in self.published.values():
            informer.watchers.append(self._published_changed)
        self.publisher = Publisher(self.pools, self.published)
        self.auth = PoolAuth(self.pools)
        # pool key -> (uid, target names) of the pools this process reconciled: which of this
        # process's own metric series to drop when a pool goes. Process state by nature (the
        # series live in this process), unlike anything a pool decides, which is read from the
        # objects: the published ones, the auth copies, the pool's status (Published).
        self._seen = {}
        self._names = None  # the providers file's names the pools were last reconciled with

    def start(self):
        import threading

        threading.Thread(target=self.informer.run, name="pool-informer", daemon=True).start()
        for informer in self.published.values():
            threading.Thread(
                target=informer.run, name="pool-%s-informer" % informer.resource, daemon=True
            ).start()
        return super().start()

    def stop(self, timeout: float = 30.0) -> None:
        self.informer.stop()
        for informer in self.published.values():
            informer.stop()
        self.due.shutdown()
        self.auth_checks.shutdown()
        super().stop(timeout)

    def _index_cached(self, proxy_informer) -> None:
        """Index what the Proxy cache already holds: the controller starts this loop after the
        Proxy informer's first list, whose changes went out before this watcher was added (a
        restarted controller would otherwise see no member and make every pool's again)."""
        proxy_informer.watchers.append(self._member_changed)
        for obj in proxy_informer.objects():
            self.members.changed(key_of(obj), None, obj)

    def _member_changed(self, key: str, old: dict | None, new: dict | None) -> None:
        for pool_key in self.members.changed(key, old, new):
            self.expectations.observe(pool_key, key, old, new)
            self.due.add(pool_key)

    def _published_changed(self, _key: str, old: dict | None, new: dict | None) -> None:
        """A Service or EndpointSlice a pool published changed or went (by hand, or our own
        write coming back): its pool is reconciled, which puts it back when it is not right."""
        pool_key = owner_key(new or old or {})
        if pool_key:
            self.due.add(pool_key)

    def resync_all(self) -> None:
        """Every cached pool due now (the providers file changed: every target may have)."""
        for key in self.informer.cache_keys():
            self.due.add(key)

    def round(self) -> None:
        """Reconcile the pools that are due: changed (the pool, a member), or at a time one of
        them must act on (``_next_check``). Nothing changed, nothing is read."""
        informers = [self.informer, self.proxies, *self.published.values()]
        if not all(i.synced.is_set() for i in informers) or not self.may_act():
            return
        configured = self.configured()
        names = None if configured is None else frozenset(configured)
        if names != self._names:
            self._names = names
            self.resync_all()
        self._check_auth_secrets()
        # The members made or deleted here reach the Proxy reconciler through the Proxy
        # informer's watch (their ADDED event, their deletionTimestamp), as any Proxy's do.
        for key in self.due.pop_due(10**6, 0.0):
            self._one(key)

    def _one(self, key: str) -> None:
        obj = self.informer.get(key)
        if obj is None:
            self.due.forget(key)
            self.due.done(key)
            self._gone(key)
            return
        if not self.expectations.satisfied(key):
            # Its own creates or deletes are not in the cache yet: planning now would repeat
            # them. Their watch events queue the pool; the wait bounds a lost one.
            self.due.done(key)
            self.due.add_after(key, self.expectations.wait_left(key))
            return
        uid = obj["metadata"]["uid"]
        member_objs = [o for o in map(self.proxies.get, self.members.of(key)) if o and owner_uid(o) == uid]
        try:
            self.reconcile(obj, member_objs)
        except Conflict as exc:
            # A write met a newer object than the snapshot: decide again from what the watch
            # brings (after the queue's back-off, by when it has normally arrived).
            log.info("pool %s: %s changed meanwhile: requeued", key, exc)
            self.due.done(key)
            self.due.add_rate_limited(key)
            return
        except Exception as exc:
            errors.log_failure(log, "pool %s: reconcile failed" % key, exc)
            self.due.done(key)
            self.due.add_rate_limited(key)
            return
        self.due.forget(key)
        self.due.done(key)
        pool = Pool.from_object(self.informer.get(key) or obj)
        self.due.add_after(key, self._next_check(pool, member_objs))
        if source_name(pool) and not pool.deleting:
            self.auth_checks.add_after(key, self.auth_recheck)

    def _check_auth_secrets(self) -> None:
        """The auth pools whose recheck came: each is due when its Secret changed (or cannot be
        told unchanged), else asked again one recheck later. One metadata-only read each, where
        a reconcile would read the Secret, its copy and what the pool publishes."""
        for key in self.auth_checks.pop_due(10**6, 0.0):
            self.auth_checks.done(key)
            obj = self.informer.get(key)
            if obj is None:
                continue  # gone: nothing to ask
            pool = Pool.from_object(obj)
            if not source_name(pool) or pool.deleting:
                continue  # its reconcile asks again when it has template.auth
            try:
                unchanged = self.auth.unchanged(pool)
            except Exception as exc:
                log.debug("pool %s: auth Secret version not read (%s); reconciling", key, _reason(exc))
                unchanged = False
            if unchanged:
                self.auth_checks.add_after(key, self.auth_recheck)
            else:
                self.due.add(key)

    def _next_check(self, pool: Pool, member_objs: list) -> float:
        """Seconds until the pool must be looked at with no event: the oldest member reaching
        maxAge, a skipped target's retry, ``auth_recheck`` while its auth Secret could not be
        read whole (once it was, ``_check_auth_secrets`` asks whether it changed), or ``resync``
        (a safety net for what no watch tells: the endpoints Secret edited or removed)."""
        now = self.clock()
        waits = [self.resync]
        if source_name(pool) and not self.auth.read_whole(pool):
            waits.append(self.auth_recheck)
        if pool.max_age:
            waits += [Member.from_object(o).created + pool.max_age - now for o in member_objs]
        for target in pool.status.get("targets") or []:
            since = target.get("degradedSince")
            if since and str(target.get("degraded") or "").startswith("member "):
                waits.append(parse_time(since) + self.target_retry - now)
        return min(max(0.5, w) for w in waits)

    def _gone(self, key: str) -> None:
        """A pool no longer cached: this process's metric series of it and its fingerprint
        cache go (nothing else of a pool is kept in the process)."""
        self.expectations.forget(key)
        if key not in self._seen:
            return
        uid, targets = self._seen.pop(key)
        namespace, name = key.split("/", 1)
        self.metrics.forget(namespace, name, targets)
        self.auth.forget(uid)

    # -- one pool ------------------------------------------------------------------------

    def reconcile(self, obj: dict, member_objs: list) -> None:
        pool = Pool.from_object(obj)
        self._seen[key_of(obj)] = (pool.uid, [t.name for t in pool.targets])
        if pool.deleting:
            self._finalize(obj, pool, member_objs)
            return
        if POOL_FINALIZER not in pool.finalizers:
            written = self.pools.set_finalizer(obj, True)
            if written is None:
                return  # gone meanwhile: its DELETED event ends it
            obj, pool = written, Pool.from_object(written)
        configured = self.configured()
        if configured is None:
            return  # no good providers file yet: every target would look unconfigured
        configured = set(configured)
        members = [Member.from_object(o) for o in member_objs]
        by_name = {o["metadata"]["name"]: o for o in member_objs}
        now = self.clock()
        try:
            copy, credentials = self.auth.current(pool)
        except LookupError as exc:
            # No revision without the credentials: nothing is created, deleted or published
            # until the Secret can be read (members made now could not start anyway).
            self._report(obj, pool, ["members not changed: %s" % exc])
            return
        except Exception as exc:
            self._report(obj, pool, ["members not changed: auth Secret copy: %s" % _reason(exc)])
            return
        revisions = {t.name: pool.revision(t, copy) for t in pool.targets}
        stamp = conditions.now_rfc3339()
        decision = decide(
            pool, members, revisions, configured, now, conditions.now_rfc3339(), self.target_retry
        )
        plan, desired = decision.plan, decision.desired
        events = []
        pool_key = key_of(obj)
        for name, reason in decision.reasons.items():
            self._delete_member(pool_key, by_name[name])
            self.metrics.deleted.labels(pool.namespace, pool.name, reason).inc()
            log.info("pool %s/%s: deleted member %s (%s)", pool.namespace, pool.name, name, reason)
            events.append(("Normal", "MemberDeleted", "deleted member %s (%s)" % (name, reason)))
        done = list(decision.reasons)
        created = self._create_members(pool_key, pool, plan.creates, revisions, copy)
        if created:
            events.append(("Normal", "MembersCreated", "created %d member(s)" % created))
        remaining = [m for m in members if m.name not in done]
        problems = self.publisher.publish(pool, remaining, now, self.auth.reader(pool, copy, credentials))
        auth_secrets, pruned = self.auth.prune(pool, copy, {m.auth_secret for m in members})
        progress = (
            "created %d, deleted %d member(s)" % (created, len(done))
            if created or done
            else "waiting for members"
        )
        status, status_events = pool_status.compute(
            pool,
            [m for m in members if m.name not in done],
            desired,
            decision.degraded,
            plan,
            stamp,
            progress,
            problems + pruned,
        )
        if auth_secrets:
            status["authSecrets"] = auth_secrets
        self._write(obj, pool, status, events + status_events)
        self._observe(pool, status, desired)

    def _report(self, obj: dict, pool: Pool, problems: list) -> None:
        """A tick that changed nothing: only its ``problems`` go into the status (Published)."""
        conds, events = pool_status.published(
            pool, pool.status.get("conditions") or [], problems, conditions.now_rfc3339()
        )
        self._write(obj, pool, dict(pool.status, conditions=conds), events)

    def _write(self, obj: dict, pool: Pool, status: dict, events: list) -> None:
        """The status when it changed, then the Events. When the write fails (the pool changed
        meanwhile: ``Conflict``, raised on for the pool to be requeued; or gone) only the
        actions' Events go: a transition or a problem not recorded is told at the tick that
        records it, so a problem's Event goes once, whatever process sends it."""
        try:
            written = status == (obj.get("status") or {}) or self.pools.write_status(obj, status)
        except Conflict:
            self._events(obj, pool, [e for e in events if e[1] in ACTIONS])
            raise
        self._events(obj, pool, events if written is not None else [e for e in events if e[1] in ACTIONS])

    def _events(self, obj: dict, pool: Pool, events: list) -> None:
        for event_type, reason, message in events:
            if reason == "PublishFailed":
                log.warning("pool %s/%s: %s", pool.namespace, pool.name, message)
            self.kube.event(obj, event_type, reason, message, api.EVENT_COMPONENT, kind=POOL_KIND)

    def _create_members(self, pool_key: str, pool: Pool, creates: dict, revisions: dict, copy: str) -> int:
        """Each target's new members (expected before the calls: their watch events may come
        first); how many were made."""
        total, created = sum(creates.values()), 0
        self.expectations.expect_creates(pool_key, total)
        for target in pool.targets:
            for _i in range(creates.get(target.name, 0)):
                try:
                    made = self.pools.create_proxy(pool.namespace, member_body(pool, target, revisions, copy))
                except Exception:
                    for _unmade in range(total - created):
                        self.expectations.create_failed(pool_key)
                    raise
                self.metrics.created.labels(pool.namespace, pool.name, target.name).inc()
                log.info(
                    "pool %s/%s: created member %s (target %s)",
                    pool.namespace,
                    pool.name,
                    made["metadata"]["name"],
                    target.name,
                )
                created += 1
        return created

    def _delete_member(self, pool_key: str, member: dict) -> None:
        """Delete one member (uid precondition), expected before the call: its watch event may
        come first."""
        meta, member_key = member["metadata"], key_of(member)
        self.expectations.expect_delete(pool_key, member_key, meta["uid"])
        try:
            self.pools.delete_proxy(meta["namespace"], meta["name"], meta["uid"])
        except Exception:
            self.expectations.delete_failed(pool_key, member_key)
            raise

    def _finalize(self, obj: dict, pool: Pool, member_objs: list) -> None:
        """The pool is being deleted: delete every member, release the pool once none is left."""
        for member in member_objs:
            meta = member["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            self._delete_member(key_of(obj), member)
            self.metrics.deleted.labels(pool.namespace, pool.name, "PoolDeleted").inc()
        if not member_objs and POOL_FINALIZER in pool.finalizers:
            self.pools.set_finalizer(obj, False)

    def _observe(self, pool: Pool, status: dict, desired: dict) -> None:
        self.metrics.desired.labels(pool.namespace, pool.name).set(pool.replicas)
        self.metrics.replicas.labels(pool.namespace, pool.name).set(status["replicas"])
        self.metrics.ready.labels(pool.namespace, pool.name).set(status["readyReplicas"])
        self.metrics.updated.labels(pool.namespace, pool.name).set(status["updatedReplicas"])
        _surge, unavailable = rollout.budget(pool.replicas, pool.max_surge, pool.max_unavailable)
        self.metrics.min_available.labels(pool.namespace, pool.name).set(max(0, pool.replicas - unavailable))
        for target, count in desired.items():
            self.metrics.target_desired.labels(pool.namespace, pool.name, target).set(count)
