# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The GC marks as Compute Engine labels, and how a UID fits in a label value.

Label values must be at most 63 characters of lowercase letters, digits, ``_`` and ``-``. A
Kubernetes UID (lowercase hex and dashes, 36 characters) already is one and is stored as is.
Any other UID (uppercase, dots, longer than 63, ...) is stored as ``h-`` plus the first 40 hex
characters of its SHA-256: deterministic, so adoption and the list filter still match. Because
a hash cannot be read back, the exact UID is also written as the instance metadata item
``proxy-operator-uid``; ``get`` and ``list_by_tag`` read the UID from that item first and fall
back to the label, so GC always compares the real UID.
"""

from __future__ import annotations

import hashlib
import re

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names

_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
HASH_PREFIX = "h-"
UID_METADATA_KEY = names.LABEL_UID
# The proxy port the instance was created for (issue 28 §7): fixed at creation (the firewall
# rule and the user's cloud-init were made for it), read back by ``fixed_fields``.
PORT_METADATA_KEY = "proxy-operator-port"


def is_label_value(value: str) -> bool:
    return bool(_LABEL_VALUE.fullmatch(value or ""))


def uid_label_value(uid: str) -> str:
    """The label value that stands for ``uid`` (see the module docstring)."""
    if is_label_value(uid) and not uid.startswith(HASH_PREFIX):
        return uid
    return HASH_PREFIX + hashlib.sha256(uid.encode("utf-8")).hexdigest()[:40]


def marks(uid: str, installation: str, provider: str = "") -> dict:
    """The instance's labels; ``provider`` marks the owning provider (two providers on one
    project each list only their own)."""
    return names.marks(uid_label_value(uid), installation, provider)


def list_filter(installation: str) -> str:
    """The aggregated-list filter: managed by us, and by this installation only."""
    return '(labels.%s = "%s") AND (labels.%s = "%s")' % (
        names.LABEL_MANAGED,
        names.LABEL_MANAGED_VALUE,
        names.LABEL_INSTALL,
        installation,
    )


def metadata_value(instance: dict, key: str) -> str | None:
    for item in (instance.get("metadata") or {}).get("items") or []:
        if item.get("key") == key:
            return item.get("value", "")
    return None


def uid_of(instance: dict) -> str:
    """The exact UID: the metadata item when present, else the label value."""
    raw = metadata_value(instance, UID_METADATA_KEY)
    if raw:
        return raw
    return (instance.get("labels") or {}).get(names.LABEL_UID, "")


def owned_by(instance: dict, uid: str) -> bool:
    """True when the instance's uid label and (if present) its uid metadata both say ``uid``."""
    if (instance.get("labels") or {}).get(names.LABEL_UID, "") != uid_label_value(uid):
        return False
    raw = metadata_value(instance, UID_METADATA_KEY)
    return raw is None or raw == uid


def fixed_fields(instance: dict) -> dict:
    """``{"port": n}`` from the port metadata item; ``{}`` for an instance made before it was
    recorded (nothing tells its port)."""
    raw = metadata_value(instance, PORT_METADATA_KEY) or ""
    return {"port": int(raw)} if raw.isdigit() else {}
