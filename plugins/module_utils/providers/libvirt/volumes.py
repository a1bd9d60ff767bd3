# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Whole small volumes: delete one that may be gone, and write one with exactly some bytes.

Used for the marks, the seed, image markers and a marker put back by a collection: each is
written whole (delete, create, upload) so a reader never sees a mix of old and new bytes, and a
failed upload leaves no volume behind.
"""

from __future__ import annotations

import logging

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    xmlbuild,
)

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")


def delete_if_present(conn, pool: str, volume: str) -> None:
    try:
        conn.volume_delete(pool, volume)
    except backend.LibvirtCallError as exc:
        if exc.code != backend.ERR_NO_STORAGE_VOL:
            raise


def spare(conn, seconds: float):
    """The same connection under a short deadline of its own, for cleanup after a failure (the
    operation's deadline may be spent)."""
    return conn.with_deadline(Deadline(seconds)) if hasattr(conn, "with_deadline") else conn


def write(conn, pool: str, name: str, data: bytes) -> None:
    """Replace ``name`` with exactly ``data`` (delete, create, upload)."""
    delete_if_present(conn, pool, name)
    conn.volume_create(pool, xmlbuild.raw_volume_xml(name, len(data)))
    upload = conn.volume_upload(pool, name, len(data))
    try:
        upload.send(data)
        upload.finish()
    except BaseException:
        upload.abort()
        try:
            spare(conn, 10.0).volume_delete(pool, name)
        except Exception as exc:
            log.warning("libvirt cleanup of volume %s failed: %s", name, exc)
        raise
