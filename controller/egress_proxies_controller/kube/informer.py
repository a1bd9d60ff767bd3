"""List + watch of Proxy objects into a local cache, feeding the work queue with keys.

Lists once, in pages of ``page_size`` (``limit``/``continue``, as client-go's pager does: a
continue token that expired mid-list (410) falls back to one unpaginated list), recording the
list's resourceVersion, then watches from that version with bookmarks, resuming from the version
of the last event applied after a dropped connection (``resume_version``: never from where the
broken watch began, which would replay a deleted object's earlier events as live) and relisting
when the server answers 410 Gone (the version is too old). An event of an object whose DELETED
event was applied is dropped (its UID is remembered): a deleted object never comes back.
``synced`` is set after the first full list: nothing that needs a complete view (GC's live UIDs)
may read the cache before that.
Only changes a reconcile cares about enqueue a key: spec (generation), deletion, annotations,
finalizers; status writes do not, and neither does any version the controller wrote itself
(``own_writes``, kube/own_writes.py): the reconcile that wrote it already decided what follows.
The cache holds only what the watch delivered, never what the controller wrote: ``snapshot``
answers ``BEHIND`` for a key whose cache has not got our last write of it yet, and the event that
catches up queues the key again. resourceVersions are opaque (compared for equality only): the
watch starts at the list's version and resumes after the last event applied, so each event it
delivers is newer than the cached object by the watch's own order, and replaces it.
``watchers`` are told every change of the cache, status included: the pool loop follows its
members' status with one.

The cache holds objects trimmed of what no reconcile reads (``trimmed``): ``managedFields``
(server-side apply bookkeeping, often larger than the spec) and kubectl's
``last-applied-configuration`` annotation (a second copy of the spec, inline cloud-init
included); inline cloud-init itself is kept as its digest (``spec.trim_inline_cloud_init``).
"""

from __future__ import annotations

import collections
import logging
import threading

from ..proxy.spec import trim_inline_cloud_init
from . import errors
from .client import ApiException, watch
from .object_ids import key_of
from .own_writes import OwnWrites

log = logging.getLogger("egress_proxies_controller.kube.informer")


PAGE_SIZE = 500
# How many deleted objects' UIDs the cache remembers to drop their replayed events (a few
# hundred KiB at most; a UID forgotten only lets a replay older than 10,000 deletes through).
DELETED_UIDS_KEPT = 10_000
#: what ``snapshot`` answers while the cache has not got the controller's last write of the key
BEHIND = object()
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def trimmed(obj: dict) -> dict:
    """``obj`` without the metadata no reconcile reads (a shallow copy: the input is not changed)."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("managedFields", None)
    annotations = meta.get("annotations")
    if annotations and LAST_APPLIED in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return trim_inline_cloud_init({**obj, "metadata": meta})


def _interesting(old: dict | None, new: dict) -> bool:
    if old is None:
        return True
    a, b = old.get("metadata") or {}, new.get("metadata") or {}
    return any(a.get(f) != b.get(f) for f in ("generation", "deletionTimestamp", "annotations", "finalizers"))


class Informer:
    def __init__(
        self,
        kube,
        namespace: str | None,
        on_change,
        watch_timeout: int = 300,
        page_size: int = PAGE_SIZE,
        lister=None,
        resource: str = "proxies",
    ):
        self.kube = kube
        self.lister = lister or kube.list_proxies  # the pool reconciler lists ProxyPools with it
        self.resource = resource  # what the lister lists, as RBAC names it: in every log line
        self.namespace = namespace
        self.on_change = on_change  # called with the key of an object whose reconcile-relevant parts changed
        # called with (key, old, new) for every change of the cache, status included (new is None
        # once the object is gone): the pool loop follows its members with one
        self.watchers: list = []
        self.watch_timeout = watch_timeout
        self.page_size = page_size
        self.synced = threading.Event()
        self._cache = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watch = None
        self.own_writes = OwnWrites()  # the versions the controller wrote, until delivered
        # The resourceVersion of the last event applied: a watch that breaks resumes from it, as
        # client-go's reflector does, never from where the broken watch began (which would
        # replay every event since, a deleted object's earlier ones first).
        self.resume_version = ""
        # UIDs whose DELETED event was applied, newest last: a later event of one (a replay) is
        # dropped, so a deleted object never comes back into the cache as live.
        self._deleted_uids: collections.OrderedDict = collections.OrderedDict()
        self.relists = 0
        self.list_pages = 0  # pages fetched by every list so far (a figure for the benchmarks)

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._cache.get(key)

    def cache_keys(self) -> list:
        with self._lock:
            return list(self._cache)

    def objects(self) -> list:
        """A snapshot of every cached Proxy (the objects themselves: callers only read them)."""
        with self._lock:
            return list(self._cache.values())

    def uids(self) -> list:
        """Every cached Proxy's UID; only meaningful once ``synced`` is set."""
        with self._lock:
            return [o["metadata"]["uid"] for o in self._cache.values()]

    def snapshot(self, key: str):
        """The cached object a reconcile decides from: None when gone, ``BEHIND`` while the cache
        has not got our last write of it (the key is queued again when it catches up)."""
        with self._lock:
            obj = self._cache.get(key)
            return BEHIND if self.own_writes.behind(key, obj) else obj

    def apply_event(self, kind: str, obj: dict) -> None:
        """One watch event into the cache: its watchers told, its key queued when a reconcile
        cares (the watch's step; tests deliver their events through it too)."""
        obj = trimmed(obj)
        key = key_of(obj)
        uid = (obj.get("metadata") or {}).get("uid")
        with self._lock:
            old = self._cache.get(key)
            if kind == "DELETED":
                self._cache.pop(key, None)
                self._deleted_uids[uid] = None
                while len(self._deleted_uids) > DELETED_UIDS_KEPT:
                    self._deleted_uids.popitem(last=False)
            elif uid in self._deleted_uids:
                return  # an event of an object already deleted (a replay): it never comes back
            else:
                self._cache[key] = obj  # newer than the cached one by the watch's order
            new = None if kind == "DELETED" else obj
            caught_up = self.own_writes.seen(key, new)
        self._tell(key, old, new)
        if kind == "DELETED" or caught_up or (_interesting(old, obj) and not self.own_writes.is_own(obj)):
            self.on_change(key)

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()

    def run(self) -> None:
        listed = False
        while not self._stop.is_set():
            try:
                if not listed:
                    self.resume_version = self._list()
                    listed = True
                self._watch_from(self.resume_version)
            except ApiException as exc:
                if exc.status == 410:
                    log.info("%s: watch expired (410 Gone): relisting", self.resource)
                    listed = False
                    continue
                log.warning("%s: list/watch failed: %s; retrying", self.resource, exc.reason)
                self._stop.wait(2.0)
            except Exception as exc:  # connection reset, timeouts: resume from the last event's version
                if self._stop.is_set():
                    return  # stop() closed the watch's connection under it: the error is ours
                log.warning("%s: watch interrupted: %s; resuming", self.resource, errors.describe(exc))
                self._stop.wait(1.0)

    def _tell(self, key: str, old: dict | None, new: dict | None) -> None:
        for watcher in self.watchers:
            watcher(key, old, new)

    def _list(self) -> str:
        started = self.own_writes.list_started()
        objects, version = self._list_pages()
        items = {key_of(o): o for o in objects}
        with self._lock:
            old = self._cache
            self._cache = items
            changed = set(items) | set(old)
            caught_up = {k for k in changed if self.own_writes.seen(k, items.get(k), listed_after=started)}
        self.relists += 1
        for key, obj in items.items():
            self._tell(key, old.get(key), obj)
            if _interesting(old.get(key), obj) or not self.synced.is_set() or key in caught_up:
                self.on_change(key)
        for key in set(old) - set(items):
            self._tell(key, old[key], None)
            self.on_change(key)
        self.synced.set()
        return version

    def _list_pages(self) -> tuple:
        """Every Proxy (trimmed) and the list's resourceVersion, fetched ``page_size`` at a time.

        Every page of one list is served from the first page's snapshot, so the first page's
        resourceVersion is the list's. A continue token that expired (410) means the snapshot
        was compacted away mid-list: start again with one unpaginated list, as client-go does.
        """
        objects: list = []
        token, version = None, None
        while True:
            kwargs = {"limit": self.page_size, "_request_timeout": 60}
            if token:
                kwargs["_continue"] = token
            try:
                page = self.lister(self.namespace, **kwargs)
            except ApiException as exc:
                if exc.status != 410 or not token:
                    raise
                log.info(
                    "%s: list continuation expired (410) after %d objects: listing without pages",
                    self.resource,
                    len(objects),
                )
                page = self.lister(self.namespace, _request_timeout=60)
                self.list_pages += 1
                meta = page.get("metadata") or {}
                return [trimmed(o) for o in page.get("items", [])], meta.get("resourceVersion")
            self.list_pages += 1
            meta = page.get("metadata") or {}
            objects.extend(trimmed(o) for o in page.get("items", []))  # page by page: a low peak
            version = version or meta.get("resourceVersion")
            token = meta.get("continue")
            if not token:
                return objects, version

    def _watch_from(self, version: str) -> None:
        """Apply the watch's events from ``version`` on; ``resume_version`` follows each one, so
        a watch broken midway resumes after the last event applied."""
        self.resume_version = version
        self._watch = watch.Watch()
        stream = self._watch.stream(
            self.lister,
            self.namespace,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=self.watch_timeout,
            _request_timeout=self.watch_timeout + 30,
        )
        for event in stream:
            if self._stop.is_set():
                break
            kind, obj = event["type"], event["object"]
            if kind == "ERROR":
                code = (obj or {}).get("code")
                if code == 410:
                    raise ApiException(status=410, reason="Gone")
                raise ApiException(status=code or 500, reason=(obj or {}).get("message", "watch error"))
            if kind != "BOOKMARK":
                self.apply_event(kind, obj)
            self.resume_version = (obj.get("metadata") or {}).get("resourceVersion") or self.resume_version
