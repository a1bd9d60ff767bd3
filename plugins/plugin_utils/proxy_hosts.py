# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""From listed instances to inventory hosts: host variables and the groups a host belongs to.

Pure data, no Ansible objects, so the mapping is the same whether the listing came fresh from
the providers or from the inventory cache. A proxy's ``zone`` is the placement zone its id
carries (gcp: ``zones/<zone>/instances/<name>``; kvm/kvm2: ``hosts/<host>/domains/<name>``, where
``placement.zone`` names the host); local and kubernetes instances have none.
"""

from __future__ import annotations

BASE_GROUP = "proxies"
HOSTVAR = "egress_proxies"

# The id prefix under which each provider type carries its zone (docs: DESIGN.md §5).
_ZONE_PREFIX = {"gcp": "zones", "kvm": "hosts", "kvm2": "hosts"}

FIELDS = (
    "id",
    "name",
    "uid",
    "provider",
    "type",
    "state",
    "ip",
    "port",
    "zone",
    "created_at",
    "installation",
)


def zone_of(provider_type: str, provider_id: str) -> str:
    """The zone an id names for its type (``""`` when the type has no zones)."""
    prefix = _ZONE_PREFIX.get(provider_type)
    parts = (provider_id or "").split("/")
    if prefix and len(parts) == 4 and parts[0] == prefix and parts[1]:
        return parts[1]
    return ""


def host_record(instance: dict, provider_type: str, port: int) -> dict:
    """The ``egress_proxies`` host variable of one listed instance (``proxy_info``'s fields and more).

    ``port`` is the configured one: the providers do not read a proxy's port back."""
    record = {key: instance.get(key, "") for key in FIELDS}
    record.update(type=provider_type, port=port, zone=zone_of(provider_type, instance.get("id", "")))
    return record


def group_keys(record: dict) -> list:
    """The ``(prefix, value)`` of each group the host is put in; empty values make no group."""
    pairs = [
        ("provider", record["provider"]),
        ("type", record["type"]),
        ("state", record["state"].lower()),
        ("zone", record["zone"]),
    ]
    return [(prefix, value) for prefix, value in pairs if value]
