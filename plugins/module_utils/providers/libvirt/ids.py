# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Provider ids and the names of everything an instance puts on a host.

The id ``hosts/<host>/domains/<name>`` is self-contained: ``get`` and ``delete`` find the
instance from it alone, even after the config's placement changed. It is parsed strictly,
because a malformed id must be Permanent, never a lookup of something else. Volume names carry
the provider type, so ``kvm`` and ``kvm2`` sharing a pool never touch each other's volumes.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
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


BASE_PREFIX = "egress-base-"
LEGACY_BASE_PREFIX = "egress-image-"  # named by catalogue key, before 2026-12-01
MARKER_SUFFIX = ".sha256"
DIGEST_CHARS = 32  # 128 bits of the sha256 in the name; the marker holds all 64 and is checked


def base_volume(content_id: str) -> str:
    """``egress-base-<first 32 hex of the sha256>``, or ``egress-base-url-<16 hex>`` for a bare
    URL (its content is not known before the download, so the URL names it)."""
    return BASE_PREFIX + content_id


def base_marker_volume(content_id: str) -> str:
    return base_volume(content_id) + MARKER_SUFFIX


def is_base_volume(volume: str) -> bool:
    """A base image volume of this collection, current or legacy (not its marker)."""
    return volume.startswith((BASE_PREFIX, LEGACY_BASE_PREFIX)) and not volume.endswith(MARKER_SUFFIX)


def never_backed(volume: str) -> bool:
    """Volumes this collection writes raw (bases, markers, seeds, marks): none of them can back
    onto a base, so the search for a base's users skips them."""
    if volume.startswith((BASE_PREFIX, LEGACY_BASE_PREFIX)):
        return True
    for type_name in ("kvm", "kvm2"):
        for suffix in (".%s.marks" % type_name, ".%s.seed.iso" % type_name):
            if volume.endswith(suffix) and names.is_dns_label(volume[: -len(suffix)]):
                return True
    return False
