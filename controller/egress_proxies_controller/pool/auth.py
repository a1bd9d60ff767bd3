"""A pool's credentials per revision: members get a copy of template.auth's Secret named by a
fingerprint of its content, so a change of the Secret's content rolls them under the budget.

A member's ``spec.auth.secretRef`` names the pool's immutable copy ``<pool>-auth-<fingerprint>``
(keys ``username`` and ``password``, owned by the pool), never the user's Secret: the Proxy
reconciler's in-place rotation (which follows the Secret it names) never fires for a member, a
member keeps the credentials it was made with until the pool replaces it, and the endpoints
Secret can list every Ready member with the credentials that member really has. The copy's name
is part of the member spec, so it is part of the revision.

The fingerprint is PBKDF2-HMAC-SHA256 (``ROUNDS``, salted with the pool's UID) of the
credentials, 10 hex characters of it: it appears in names and labels that more people can read
than the Secret, so it is as slow to guess a password from as the SHA-512 crypt hash a proxy
keeps (more rounds), and computed once per content change (remembered per pool in memory).

Copies no member refers to any more (and that are not the current one) are deleted with the
pool's UID checked on the object and as a precondition; the pool's ``status.authSecrets``
remembers which exist, so a controller restart forgets none. Any that remain go with the pool
(owner reference).
"""

from __future__ import annotations

import hashlib

from ..proxy import auth_secret
from .model import POOL_LABEL, Pool, owner_reference

ROUNDS = 100_000
KEYS = ("username", "password")


def fingerprint(pool_uid: str, username: str, password: str) -> str:
    material = ("%s\0%s" % (username, password)).encode("utf-8")
    salt = ("egress-proxies-pool-auth:%s" % pool_uid).encode()
    return hashlib.pbkdf2_hmac("sha256", material, salt, ROUNDS).hex()[:10]


def copy_name(pool: Pool, print_: str) -> str:
    return "%s-auth-%s" % (pool.name[:200], print_)


def source_name(pool: Pool) -> str:
    return ((pool.template.get("auth") or {}).get("secretRef") or {}).get("name") or ""


class PoolAuth:
    """The current copy of each pool, the credentials of every copy (cached: copies are
    immutable), and the pruning of copies no member uses."""

    def __init__(self, pool_kube):
        self.kube = pool_kube
        self._prints = {}  # pool uid -> ((username, password), fingerprint): computed once per change
        self._made = {}  # (namespace, copy name) -> pool uid: known to exist with this content
        self._cache = {}  # (namespace, copy name) -> (username, password)

    def forget(self, uid: str) -> None:
        self._prints.pop(uid, None)
        for key in [k for k, owner in self._made.items() if owner == uid]:
            del self._made[key]
            self._cache.pop(key, None)

    def current(self, pool: Pool) -> tuple:
        """(copy name, credentials) for new members, creating the copy if needed; ("", None)
        without template.auth; ``LookupError`` naming the Secret (never a value) when the
        Secret cannot be read, holds unusable credentials, or the copy's name is taken."""
        source = source_name(pool)
        if not source:
            return "", None
        username, password = self.kube.auth_credentials(pool.namespace, source)
        why = auth_secret.problem(username, password)
        if why:
            raise LookupError("auth Secret %s/%s: %s" % (pool.namespace, source, why))
        known = self._prints.get(pool.uid)
        if known is None or known[0] != (username, password):
            known = ((username, password), fingerprint(pool.uid, username, password))
            self._prints[pool.uid] = known
        name = copy_name(pool, known[1])
        if (pool.namespace, name) not in self._made:
            self._ensure_copy(pool, name, username, password)
            self._made[(pool.namespace, name)] = pool.uid
        self._cache[(pool.namespace, name)] = (username, password)
        return name, (username, password)

    def _ensure_copy(self, pool: Pool, name: str, username: str, password: str) -> None:
        import base64

        current = self.kube.read("Secret", pool.namespace, name)
        if current is None:
            self.kube.create(
                "Secret",
                pool.namespace,
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {
                        "name": name,
                        "namespace": pool.namespace,
                        "labels": {POOL_LABEL: pool.name},
                        "ownerReferences": [owner_reference(pool)],
                    },
                    "type": "Opaque",
                    "immutable": True,
                    "data": {
                        "username": base64.b64encode(username.encode()).decode(),
                        "password": base64.b64encode(password.encode()).decode(),
                    },
                },
            )
            return
        if not _owned(current, pool):
            raise LookupError(
                "Secret %s/%s exists and is not this pool's: no member is made" % (pool.namespace, name)
            )

    def credentials(self, pool: Pool, name: str, current: tuple | None):
        """A member's credentials by the Secret its spec names: ``current`` for the user's
        Secret itself (a member made before copies existed), a copy's from the cache or read
        once (copies never change); ``LookupError`` when unreadable."""
        if not name:
            return None
        if name == source_name(pool):
            return current
        key = (pool.namespace, name)
        if key not in self._cache:
            self._cache[key] = self.kube.auth_credentials(pool.namespace, name)
        return self._cache[key]

    def prune(self, pool: Pool, current: str, referenced: set) -> tuple:
        """Delete the pool's copies that neither new nor existing members use; returns the
        names still there (for status.authSecrets) and the problems met (no values)."""
        recorded = set((pool.status or {}).get("authSecrets") or []) | {
            n for (_ns, n), owner in self._made.items() if owner == pool.uid
        }
        keep = {n for n in recorded if n == current or n in referenced}
        problems = []
        for name in sorted(recorded - keep):
            obj = self.kube.read("Secret", pool.namespace, name)
            if obj is not None:
                if not _owned(obj, pool):
                    continue  # never ours to delete: forgotten, not deleted
                try:
                    self.kube.delete_secret(pool.namespace, name, obj["metadata"]["uid"])
                except Exception as exc:
                    problems.append(
                        "Secret %s not deleted: %s" % (name, getattr(exc, "reason", type(exc).__name__))
                    )
                    keep.add(name)
                    continue
            self._made.pop((pool.namespace, name), None)
            self._cache.pop((pool.namespace, name), None)
        return sorted(keep), problems


def _owned(obj: dict, pool: Pool) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("uid") == pool.uid and r.get("controller") for r in refs)
