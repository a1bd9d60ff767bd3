"""The Proxy spec as the reconciler sees it, and its hash.

The hash covers every spec field (ignored placement fields included, as the contract says: a
change to any of them replaces the instance). A cloud-init Secret is hashed by reference (name
and key), not by content: the controller never holds secret content longer than one create.
The auth Secret is hashed by name too, and only when set, so a Proxy without auth keeps the
hash it had before auth existed (an upgrade replaces nothing); its content is re-applied on
every poll instead (docs/auth.md), which is how a rotated Secret reaches the instance.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

DEFAULT_PORT = 3128


@dataclasses.dataclass(frozen=True)
class ProxySpec:
    provider: str
    placement: dict
    cloud_init_inline: str = dataclasses.field(default="", repr=False)
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
            placement={k: placement.get(k) or "" for k in ("region", "zone", "machineType", "image")},
            cloud_init_inline=cloud.get("inline") or "",
            cloud_init_secret=(ref.get("name", ""), ref.get("key", "")) if ref else (),
            port=int(spec.get("port") or DEFAULT_PORT),
            auth_secret=((spec.get("auth") or {}).get("secretRef") or {}).get("name") or "",
        )

    def hash(self) -> str:
        doc = {
            "provider": self.provider,
            "placement": self.placement,
            "cloudInit": {
                "inline": hashlib.sha256(self.cloud_init_inline.encode()).hexdigest(),
                "secretRef": list(self.cloud_init_secret),
            },
            "port": self.port,
        }
        if self.auth_secret:
            doc["auth"] = {"secretRef": self.auth_secret}
        canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]
