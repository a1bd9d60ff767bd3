# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Instance names and the marks that make an instance ours (blueprint §4).

``name_from_uid`` is deterministic because idempotency depends on it: a repeated create for the
same Proxy must land on the same name. Algorithm: SHA-256 of the UID's UTF-8 bytes, RFC 4648
base32 of the digest, lowercased, first 16 characters, prefixed ``proxy-``. The result (22
characters of ``[a-z2-7-]``) is a valid DNS label, GCP instance name and libvirt domain name.

The marks: ``proxy-operator-managed=true`` says the instance is managed, ``proxy-operator-uid``
names the owning Proxy, and ``proxy-operator-install`` names the installation, so two
installations sharing a backend never collect each other's instances.
"""

from __future__ import annotations

import base64
import hashlib
import re

NAME_PREFIX = "proxy-"
NAME_HASH_CHARS = 16

LABEL_MANAGED = "proxy-operator-managed"
LABEL_MANAGED_VALUE = "true"
LABEL_UID = "proxy-operator-uid"
LABEL_INSTALL = "proxy-operator-install"
# The configured provider that made the instance, where two providers can share one backend
# (two local providers on one stateDir): an instance belongs to exactly one provider.
LABEL_PROVIDER = "proxy-operator-provider"

DEFAULT_INSTALLATION = "default"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def name_from_uid(uid: str) -> str:
    """``proxy-`` plus 16 lowercase base32 characters of SHA-256(uid)."""
    if not uid:
        raise ValueError("uid must not be empty")
    digest = hashlib.sha256(uid.encode("utf-8")).digest()
    return NAME_PREFIX + base64.b32encode(digest).decode("ascii").lower()[:NAME_HASH_CHARS]


def is_dns_label(value: str) -> bool:
    return bool(_DNS_LABEL.fullmatch(value or ""))  # fullmatch: "$" alone lets "name\n" through


def marks(uid: str, installation: str, provider: str = "") -> dict:
    """The marks as a label map, for backends with native labels; with ``provider`` (a DNS
    label, so a valid label value everywhere) the owning provider's mark too."""
    out = {
        LABEL_MANAGED: LABEL_MANAGED_VALUE,
        LABEL_UID: uid,
        LABEL_INSTALL: installation,
    }
    if provider:
        out[LABEL_PROVIDER] = provider
    return out


def is_managed(labels: dict) -> bool:
    return (labels or {}).get(LABEL_MANAGED) == LABEL_MANAGED_VALUE


def provider_owns(marks: dict, provider: str) -> bool:
    """Whether the instance of ``marks`` belongs to ``provider``.

    One made before the provider was recorded (no mark) belongs to every provider that sees it:
    nothing tells which one made it, and hiding it from all would make it uncollectable. A pool
    counts such an instance once, on its target's provider (``pool_members.choose``).
    """
    recorded = (marks or {}).get(LABEL_PROVIDER) or ""
    return not recorded or recorded == provider
