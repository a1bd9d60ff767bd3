"""The Proxy spec as the reconciler sees it, and its hash.

The hash covers every spec field (ignored placement fields included, as the contract says: a
change to any of them replaces the instance). A cloud-init Secret is hashed by reference (name
and key), not by content: the controller never holds secret content longer than one create.
The auth Secret is hashed by name too, and only when set, so a Proxy without auth keeps the
hash it had before auth existed (an upgrade replaces nothing); its content is re-applied on
every poll instead (docs/auth.md), which is how a rotated Secret reaches the instance.

Inline cloud-init is known here by its digest only: the informer's cache keeps the digest in
place of the text (``INLINE_DIGEST_KEY``), so 10,000 cached Proxies do not hold 10,000 copies
of their user-data; a create reads the text from the API server (``inline_cloud_init``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.placement import CRD_KEYS

DEFAULT_PORT = 3128
# Cache-only key beside (in place of) spec.cloudInit.inline: the sha256 of the text.
INLINE_DIGEST_KEY = "inlineSha256"


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


NO_INLINE_DIGEST = digest_of("")  # what the hash has always covered for "no inline cloud-init"


def trim_inline_cloud_init(obj: dict) -> dict:
    """``obj`` with spec.cloudInit.inline replaced by its digest (a shallow copy; the input is
    not changed). The hash and every decision stay the same: they read only the digest."""
    spec = obj.get("spec") or {}
    cloud = spec.get("cloudInit") or {}
    if not cloud.get("inline"):
        return obj
    cloud = {k: v for k, v in cloud.items() if k != "inline"}
    cloud[INLINE_DIGEST_KEY] = digest_of(spec["cloudInit"]["inline"])
    return {**obj, "spec": {**spec, "cloudInit": cloud}}


def inline_cloud_init(obj: dict, digest: str) -> str:
    """The inline cloud-init of ``obj`` (read from the API server), checked against the digest
    the decision was made from; ``LookupError`` when it is not that text any more."""
    text = ((obj.get("spec") or {}).get("cloudInit") or {}).get("inline") or ""
    if digest_of(text) != digest:
        raise LookupError("spec.cloudInit.inline changed since this create was planned")
    return text


@dataclasses.dataclass(frozen=True)
class ProxySpec:
    provider: str
    placement: dict
    cloud_init_digest: str = ""  # sha256 of spec.cloudInit.inline; "" when there is none
    cloud_init_secret: tuple = ()  # (name, key) when cloudInit.secretRef is used
    port: int = DEFAULT_PORT
    auth_secret: str = ""  # spec.auth.secretRef.name: a Secret with keys username and password

    @classmethod
    def from_object(cls, obj: dict) -> ProxySpec:
        spec = obj.get("spec") or {}
        cloud = spec.get("cloudInit") or {}
        ref = cloud.get("secretRef") or {}
        placement = spec.get("placement") or {}
        return cls(
            provider=spec.get("provider") or "",
            placement={key: placement.get(key) or "" for key in CRD_KEYS.values()},
            cloud_init_digest=digest_of(cloud["inline"])
            if cloud.get("inline")
            else cloud.get(INLINE_DIGEST_KEY, ""),
            cloud_init_secret=(ref.get("name", ""), ref.get("key", "")) if ref else (),
            port=int(spec.get("port") or DEFAULT_PORT),
            auth_secret=((spec.get("auth") or {}).get("secretRef") or {}).get("name") or "",
        )

    def hash(self) -> str:
        doc = {
            "provider": self.provider,
            "placement": self.placement,
            "cloudInit": {
                "inline": self.cloud_init_digest or NO_INLINE_DIGEST,
                "secretRef": list(self.cloud_init_secret),
            },
            "port": self.port,
        }
        if self.auth_secret:
            doc["auth"] = {"secretRef": self.auth_secret}
        canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]
