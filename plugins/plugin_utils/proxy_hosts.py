# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""From listed instances to inventory hosts: host variables and the groups a host belongs to.

Pure data, no Ansible objects, so the mapping is the same whether the listing came fresh from
the providers or from the inventory cache. A proxy's ``zone`` is the placement zone its id
carries (gcp: ``zones/<zone>/instances/<name>``; kvm/kvm2: ``hosts/<host>/domains/<name>``, where
``placement.zone`` names the host); local and kubernetes instances have none.

A host's name comes from the ``hostnames`` option: an ordered list of preferences, each a field
of the record (``name``, ``uid``, ``ip``, ``id``) or a Jinja2 template, the first one that yields
a non-empty value winning, as amazon.aws.aws_ec2's and google.cloud.gcp_compute's ``hostnames``.
The plugin renders the templates and decides what a name already taken means.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt

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


# The record fields a ``hostnames`` entry may name; anything else must be a template.
HOSTNAME_FIELDS = ("name", "uid", "ip", "id")


def hostnames_problem(preferences) -> str:
    """The first problem of a ``hostnames`` value, naming the entry (``hostnames[1]: ...``), or ``""``.

    An entry that is neither a field nor a template (``public_ip``, ``nmae``) is refused rather
    than read as a literal name, so a typo never names every host the same."""
    if not isinstance(preferences, list):
        return "hostnames: %s is not a list" % excerpt(preferences)
    if not preferences:
        return "hostnames: an empty list names no host (leave it out for [name])"
    seen = set()
    for index, entry in enumerate(preferences):
        field = "hostnames[%d]" % index
        if isinstance(entry, dict | list):  # aws_ec2's {name, prefix, separator} form, for one
            kind = "mapping" if isinstance(entry, dict) else "list"
            return "%s: a %s is not a field name or a template" % (field, kind)
        if not isinstance(entry, str) or not entry.strip():
            return "%s: %s is not a field name or a template" % (field, excerpt(entry))
        if entry not in HOSTNAME_FIELDS and "{{" not in entry:
            return "%s: %s is none of %s and not a Jinja2 template ('{{ ... }}')" % (
                field,
                excerpt(entry),
                ", ".join(HOSTNAME_FIELDS),
            )
        if entry in seen:
            return "%s: %s is given twice" % (field, excerpt(entry))
        seen.add(entry)
    return ""


def hostname_candidates(record: dict, preferences: list, render) -> list:
    """``(label, host name)`` for each preference that yields a non-empty value, in order, then
    the instance name (``label`` ``"the instance name"``) when ``name`` is not among them.

    ``render(index, template)`` renders a template entry (``""`` when it yields nothing)."""
    found = []
    for index, entry in enumerate(preferences):
        value = record.get(entry, "") if entry in HOSTNAME_FIELDS else render(index, entry)
        value = "" if value is None else str(value).strip()
        if value:
            found.append(("hostnames[%d]" % index, value))
    if "name" not in preferences:
        found.append(("the instance name", record["name"]))
    return found
