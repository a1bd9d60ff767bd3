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
keeps (more rounds), and computed once per content change (``PoolAuth._prints``, a cache).

What exists is read from the API, never remembered: at every reconcile the current copy is read
back (one ``get``) and made when missing, or deleted (UID precondition) and made again when its content
is not the credentials its name stands for; the other copies members name are read once a tick.
So a restarted controller, or another replica taking over, makes no copy that exists and fixes
one that drifted. Copies no member refers to any more (and that are not the current one) are
deleted with the pool's UID checked on the object and as a precondition; the pool's
``status.authSecrets`` records which exist, so a controller restart forgets none. Any that
remain go with the pool (owner reference).

The user's Secret is not watched (that would take listing every Secret of the namespace): every
recheck the pool loop asks whether it changed with one metadata-only ``get`` (``unchanged``: its
resourceVersion against the one the last reconcile read, no value crosses the wire), and
reconciles the pool only when it did. So a hand-deleted copy is made again at the pool's next
reconcile (an event of the pool or a member, or the resync), not at the next recheck.
"""

from __future__ import annotations

import base64
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
    """The current copy of each pool, the credentials of the copies its members name, and the
    pruning of copies no member uses: all read from the API each tick."""

    def __init__(self, pool_kube):
        self.kube = pool_kube
        # pool uid -> ((username, password), fingerprint): a cache of ``fingerprint`` (a pure
        # function, 100,000 PBKDF2 rounds) so a pool re-reading its Secret every few seconds does
        # not compute it again; losing it costs one computation and never changes a decision.
        self._prints = {}
        # pool uid -> (Secret name, resourceVersion) of the auth Secret the pool's last
        # ``current`` read whole: ``unchanged`` compares it with a metadata-only read, so a pool
        # is reconciled when its Secret changes, not every recheck. Losing it costs one
        # reconcile; an unreadable Secret records nothing (the pool retries whole each recheck).
        self._versions = {}

    def forget(self, uid: str) -> None:
        self._prints.pop(uid, None)
        self._versions.pop(uid, None)

    def read_whole(self, pool: Pool) -> bool:
        """Whether the pool's last reconcile read its auth Secret whole (``unchanged`` can ask)."""
        seen = self._versions.get(pool.uid)
        return seen is not None and seen[0] == source_name(pool)

    def unchanged(self, pool: Pool) -> bool:
        """Whether the pool's auth Secret is the one its last reconcile read (one metadata-only
        ``get``, no value read): False when it changed, went, or was never read whole."""
        if not self.read_whole(pool):
            return False
        source, version = self._versions[pool.uid]
        return self.kube.secret_version(pool.namespace, source) == version

    def current(self, pool: Pool) -> tuple:
        """(copy name, credentials) for new members, creating the copy if needed; ("", None)
        without template.auth; ``LookupError`` naming the Secret (never a value) when the
        Secret cannot be read, holds unusable credentials, or the copy's name is taken."""
        source = source_name(pool)
        if not source:
            return "", None
        self._versions.pop(pool.uid, None)
        try:
            (username, password), version = self.kube.auth_source(pool.namespace, source)
        except LookupError as exc:  # missing Secret or key: say what the Secret must hold
            raise LookupError("%s; %s" % (exc, auth_secret.needs(pool.namespace, source))) from None
        why = auth_secret.problem(username, password)
        if why:
            raise LookupError("auth Secret %s/%s: %s" % (pool.namespace, source, why))
        known = self._prints.get(pool.uid)
        if known is None or known[0] != (username, password):
            known = ((username, password), fingerprint(pool.uid, username, password))
            self._prints[pool.uid] = known
        name = copy_name(pool, known[1])
        self._ensure_copy(pool, name, username, password)
        self._versions[pool.uid] = (source, version)
        return name, (username, password)

    def _ensure_copy(self, pool: Pool, name: str, username: str, password: str) -> None:
        """The copy ``name`` as the API holds it: made when missing, made again (it is
        immutable) when it does not hold these credentials."""
        current = self.kube.read("Secret", pool.namespace, name)
        if current is not None and not _owned(current, pool):
            raise LookupError(
                "Secret %s/%s exists and is not this pool's: no member is made" % (pool.namespace, name)
            )
        if current is not None and _content(current) == (username, password):
            return
        if current is not None:
            self.kube.delete_secret(pool.namespace, name, current["metadata"]["uid"])
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

    def reader(self, pool: Pool, copy: str, current: tuple | None):
        """One tick's ``member -> credentials`` by the Secret the member's spec names:
        ``current`` for the current copy (just read back) and for the user's Secret itself (a
        member made before copies existed); any other copy read once for the tick;
        ``LookupError`` when unreadable."""
        known = {"": None, copy: current, source_name(pool): current}

        def of(member) -> tuple | None:
            name = member.auth_secret
            if name not in known:
                known[name] = self.kube.auth_credentials(pool.namespace, name)
            return known[name]

        return of

    def prune(self, pool: Pool, current: str, referenced: set) -> tuple:
        """Delete the pool's copies that neither new nor existing members use; returns the
        names still there (for status.authSecrets) and the problems met (no values)."""
        recorded = set((pool.status or {}).get("authSecrets") or []) | ({current} - {""})
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
        return sorted(keep), problems


def _content(secret: dict) -> tuple | None:
    """A copy's (username, password), None when it holds no such text."""
    data = secret.get("data") or {}
    try:
        return tuple(base64.b64decode(data[key]).decode("utf-8") for key in KEYS)
    except (KeyError, TypeError, UnicodeDecodeError, ValueError):
        return None


def _owned(obj: dict, pool: Pool) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("uid") == pool.uid and r.get("controller") for r in refs)
