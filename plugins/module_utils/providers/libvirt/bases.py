# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Who uses a base image volume, and collecting a base nobody uses any more.

A base is in use while any volume of its pool (an overlay of ours, or anyone's volume) names it
as its backing store. A base is collected by ``delete``, right after the last overlay of ours
that backed onto it is gone and when the provider's catalogue no longer names it (provider.py),
and never otherwise; a base that no overlay ever used (one the libvirt_host role seeded) stays.

Collection runs beside creates of other processes, which cannot share our in-process lock, so
it works in two steps a create can detect: delete the marker, look for users again, and only
then delete the base (restoring the marker when a user appeared). A create checks, after making
its overlay, that the base and its marker are still there (``still_cached``), and otherwise
removes its overlay and fails Transient: a race costs a retry, never a disk on a missing base.
"""

from __future__ import annotations

import logging
import posixpath
import xml.etree.ElementTree as ET

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    ids,
    volumes,
)

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")

MARKER_LIMIT = 4096


def backing_of(conn, pool: str, volume: str) -> str:
    """The backing store path of ``volume``, ``""`` when it has none or does not exist."""
    try:
        text = conn.volume_xml(pool, volume)
    except backend.LibvirtCallError as exc:
        if exc.code in (backend.ERR_NO_STORAGE_VOL, backend.ERR_NO_STORAGE_POOL):
            return ""
        raise
    return (ET.fromstring(text).findtext("backingStore/path") or "").strip()


def _path(conn, pool: str, volume: str) -> str:
    try:
        return conn.volume_path(pool, volume)
    except backend.LibvirtCallError as exc:
        if exc.code == backend.ERR_NO_STORAGE_VOL:
            return ""
        raise


def users(conn, pool: str, base: str, names=None) -> list:
    """The volumes of ``pool`` that back onto the volume ``base`` (one XML read per candidate:
    the raw volumes this collection writes are skipped)."""
    path = _path(conn, pool, base)
    if not path:
        return []
    found = []
    for volume in sorted(conn.volume_names(pool) if names is None else names):
        if volume == base or ids.never_backed(volume):
            continue
        if backing_of(conn, pool, volume) == path:
            found.append(volume)
    return found


def still_cached(conn, pool: str, volume: str, marker: str) -> bool:
    present = set(conn.volume_names(pool))
    return volume in present and marker in present


def collect(conn, pool: str, backing_path: str) -> str:
    """Delete the base at ``backing_path`` (and its marker) when no volume backs onto it any
    more; returns its name, or ``""`` when it was kept or is not a base of this collection."""
    base = posixpath.basename(backing_path)
    if not ids.is_base_volume(base) or _path(conn, pool, base) != backing_path:
        return ""
    if users(conn, pool, base):
        return ""
    marker = base + ids.MARKER_SUFFIX
    saved = b""
    if marker in conn.volume_names(pool):
        saved = conn.volume_download(pool, marker, MARKER_LIMIT)
        volumes.delete_if_present(conn, pool, marker)
    left = users(conn, pool, base)
    if left:  # a create of another process made an overlay meanwhile: put the marker back
        if saved:
            volumes.write(volumes.spare(conn, 15.0), pool, marker, saved)
        log.info("libvirt base %s kept: %s appeared while collecting it", base, ", ".join(left))
        return ""
    volumes.delete_if_present(conn, pool, base)
    log.info("libvirt base %s collected: no volume backs onto it", base)
    return base
