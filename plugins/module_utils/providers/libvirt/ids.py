# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Provider ids and the names of everything an instance puts on a host.

The id ``hosts/<host>/domains/<name>`` is self-contained: ``get`` and ``delete`` find the
instance from it alone, even after the config's placement changed. It is parsed strictly,
because a malformed id must be Permanent, never a lookup of something else. Volume names carry
the provider type, so ``kvm`` and ``kvm2`` sharing a pool never touch each other's volumes.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.config import (
    _IDENTIFIER,
)


def format_id(host: str, name: str) -> str:
    return "hosts/%s/domains/%s" % (host, name)


def parse_id(provider_id) -> tuple:
    """``hosts/<host>/domains/<name>`` -> ``(host, name)``; ``ValueError`` for anything else."""
    parts = provider_id.split("/") if isinstance(provider_id, str) else []
    if (
        len(parts) != 4
        or parts[0] != "hosts"
        or parts[2] != "domains"
        or not _IDENTIFIER.fullmatch(parts[1])
        or not names.is_dns_label(parts[3])
    ):
        raise ValueError("malformed provider id %r: want hosts/<host>/domains/<name>" % (provider_id,))
    return parts[1], parts[3]


def overlay_volume(name: str, type_name: str) -> str:
    return "%s.%s.qcow2" % (name, type_name)


def seed_volume(name: str, type_name: str) -> str:
    return "%s.%s.seed.iso" % (name, type_name)


def marks_volume(name: str, type_name: str) -> str:
    return "%s.%s.marks" % (name, type_name)


def instance_volumes(name: str, type_name: str) -> tuple:
    """In delete order: the marks volume goes last, so a half-deleted set is still found."""
    return overlay_volume(name, type_name), seed_volume(name, type_name), marks_volume(name, type_name)


def name_of_marks_volume(volume: str, type_name: str):
    """The instance name a marks volume belongs to, or ``None`` when it is not one of ours."""
    suffix = ".%s.marks" % type_name
    if not volume.endswith(suffix):
        return None
    name = volume[: -len(suffix)]
    return name if names.is_dns_label(name) else None


def image_volume(key: str) -> str:
    return "egress-image-%s" % key


def image_marker_volume(key: str) -> str:
    return "egress-image-%s.sha256" % key
