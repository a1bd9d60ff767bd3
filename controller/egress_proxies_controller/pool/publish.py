"""What a pool tells its clients: the endpoints Secret, a headless Service and its EndpointSlice.

``<pool>-endpoints`` holds ``proxies.txt`` (one URL per Ready member, with the credentials that
member was made with when template.auth is set, pool_auth) and ``proxies.json`` (address, port,
provider, zone, createdAt, age); crawlers mount it. The selector-less headless Service
``<pool>`` and the EndpointSlice of the Ready members' addresses make ``<pool>.<namespace>.svc``
resolve to them. All three are owned by the pool (Kubernetes collects them with it) and are
rewritten only when what they say differs from the object as it is, compared by content, ``age``
aside: the Service and the EndpointSlice as their informers' caches hold them (watched by the
pool label: no API call at a publish that changes nothing), the Secret read back with one
``get`` (Secrets are not watched: that would take listing every Secret of the namespace). Our
own writes reach those caches through their watch only: until it delivers one, the object is
``BEHIND`` (kube/own_writes.py) and left alone, and its event queues the pool again. A replace
is guarded by the version it was decided from: a conflict raises ``Conflict`` and the pool is
requeued. Nothing about them is kept in the process, so a restarted controller, or another
replica taking over, writes nothing while they are right, and an object edited or deleted by
hand is put back at the pool's next tick. The content itself is compared, not a digest
annotation beside it, which a hand edit of the data would leave as it was. An object of that
name that the pool does not own is never overwritten (one without the pool label is not in the
caches: its create answers 409 AlreadyExists and it is reported the same way). Credentials
exist only in the Secret's data: never in a log line, an Event or the pool's status.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import time
import urllib.parse

from ..kube.client import ApiException, Conflict
from ..kube.informer import BEHIND
from .model import POOL_LABEL, Member, Pool, owner_reference

log = logging.getLogger("egress_proxies_controller.pool.publish")
MANAGED_BY = "egress-proxies-controller"


def endpoint_url(member: Member, credentials: tuple | None) -> str:
    auth = ""
    if credentials:
        user, password = (urllib.parse.quote(part, safe="") for part in credentials)
        auth = "%s:%s@" % (user, password)
    return "http://%s%s:%d" % (auth, member.ip, member.port)


def render(members: list, credentials, now: float) -> dict:
    """The endpoints Secret's two keys for the Ready ``members`` (sorted by name).
    ``credentials``: one (username, password) for all, None, or a function of the member
    (members of two revisions have different ones during a roll; pool_auth)."""
    ready = sorted((m for m in members if m.ready), key=lambda m: m.name)
    text = "".join(
        endpoint_url(m, credentials(m) if callable(credentials) else credentials) + "\n" for m in ready
    )
    entries = [
        {
            "name": m.name,
            "address": m.ip,
            "port": m.port,
            "provider": m.provider,
            "zone": m.zone,
            "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(m.created)),
            "age": int(max(0, now - m.created)),
        }
        for m in ready
    ]
    return {"proxies.txt": text, "proxies.json": json.dumps(entries, indent=1, sort_keys=True) + "\n"}


def sliceable(address: str) -> bool:
    """Whether the API server takes ``address`` in an EndpointSlice: it refuses loopback and
    link-local ones (the local provider's), which only the endpoints Secret lists then."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return ip.version == 4 and not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)


def _without_age(text: str | None) -> list:
    """proxies.json's entries without their ever-growing age: what decides a rewrite."""
    return [{k: v for k, v in e.items() if k != "age"} for e in json.loads(text or "[]")]


def _meta(pool: Pool, name: str, labels=None) -> dict:
    return {
        "name": name,
        "namespace": pool.namespace,
        "labels": {POOL_LABEL: pool.name, **(labels or {})},
        "ownerReferences": [owner_reference(pool)],
    }


def _owned(obj: dict, pool: Pool) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("uid") == pool.uid for r in refs)


class Publisher:
    """Writes a pool's three objects from what the API holds; keeps no state of its own.
    ``caches``: the informer of each watched kind (Service, EndpointSlice) by kind."""

    def __init__(self, pool_kube, caches: dict):
        self.kube = pool_kube
        self.caches = caches

    def publish(self, pool: Pool, members: list, now: float, credentials=None) -> list:
        """Bring the three objects up to date; returns problems to report (never a secret).
        ``credentials(member)`` gives a member's (username, password) or None; a
        ``LookupError`` from it (naming a Secret, never a value) publishes nothing."""
        problems = []
        ready = [m for m in members if m.ready]
        try:
            data = render(ready, credentials, now)
        except LookupError as exc:
            return ["endpoints not published: %s" % exc]
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": _meta(pool, pool.name + "-endpoints"),
            "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }
        problems += self._ensure(pool, secret, replace=True)
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(pool, pool.name),
            "spec": {"clusterIP": "None", "type": "ClusterIP", "publishNotReadyAddresses": False},
        }
        problems += self._ensure(pool, service, replace=False)
        port = int(pool.template.get("port") or 3128)
        slice_ = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": _meta(
                pool,
                pool.name,
                {
                    "kubernetes.io/service-name": pool.name,
                    "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
                },
            ),
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": [m.ip], "conditions": {"ready": True}, "hostname": m.name}
                for m in sorted(ready, key=lambda m: m.name)
                if sliceable(m.ip)
            ],
            "ports": [{"name": "proxy", "port": port, "protocol": "TCP"}],
        }
        problems += self._ensure(pool, slice_, replace=True)
        return problems

    def _ensure(self, pool: Pool, body: dict, replace: bool) -> list:
        """One object; an API error is a problem to report, never the end of the pool's tick."""
        try:
            return self._write(pool, body, replace)
        except Conflict:
            raise  # decided from a stale object: the pool is requeued
        except Exception as exc:
            reason = getattr(exc, "reason", "") or type(exc).__name__
            return ["%s %s not written: %s" % (body["kind"], body["metadata"]["name"], reason)]

    def _write(self, pool: Pool, body: dict, replace: bool) -> list:
        """Create, replace or leave ``body``'s object as the one it is calls for (the Service is
        only ever created: nothing in it changes)."""
        kind, name = body["kind"], body["metadata"]["name"]
        cache = self.caches.get(kind)
        if cache is None:
            current = self.kube.read(kind, pool.namespace, name)
        else:
            current = cache.snapshot("%s/%s" % (pool.namespace, name))
            if current is BEHIND:
                return []  # our last write of it is on its way: its watch event queues the pool
        if current is None:
            try:
                written = self.kube.create(kind, pool.namespace, body)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                return ["%s %s exists and is not this pool's: left as it is" % (kind, name)]
        elif not _owned(current, pool):
            return ["%s %s exists and is not this pool's: left as it is" % (kind, name)]
        elif replace and self._differs(kind, current, body):
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            written = self.kube.replace(kind, pool.namespace, body)
        else:
            return []
        if cache is not None:
            cache.own_writes.wrote(written)
        return []

    @staticmethod
    def _differs(kind: str, current: dict, body: dict) -> bool:
        if kind == "Secret":
            old = {k: base64.b64decode(v).decode() for k, v in (current.get("data") or {}).items()}
            new = {k: base64.b64decode(v).decode() for k, v in body["data"].items()}
            if old.get("proxies.txt") != new.get("proxies.txt"):
                return True
            return _without_age(old.get("proxies.json")) != _without_age(new.get("proxies.json"))
        return (current.get("endpoints") or []) != body["endpoints"] or current.get("ports") != body["ports"]
