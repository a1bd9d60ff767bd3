# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Delete: destroy, undefine, then the instance's volumes; idempotent at every step.

Each step tolerates "already done" (not running, no such domain, no such volume, no pool), so
a delete interrupted anywhere finishes on the next call. A domain that exists without this
type's marks is not ours and is refused (Permanent), never destroyed. The marks volume is
removed last, so a half-deleted set stays findable by list_by_tag. Returns only when the domain
and every volume are gone (checked by reading back).
"""

from __future__ import annotations

import logging

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    ids,
    inspect,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.classify import (
    Permanent,
    Transient,
)

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")


def remove_domain(conn, name: str, type_name: str) -> bool:
    """Destroy and undefine; ``False`` when there was no domain."""
    try:
        marks = inspect.read_marks(conn, name, type_name)
    except backend.LibvirtCallError as exc:
        if exc.code == backend.ERR_NO_DOMAIN:
            return False
        raise
    if marks is None or not marks.managed:
        raise Permanent("domain %s has no %s marks: it is not ours to delete" % (name, type_name))
    for step in (conn.domain_destroy, conn.domain_undefine):
        try:
            step(name)
        except backend.LibvirtCallError as exc:
            if exc.code == backend.ERR_NO_DOMAIN:
                return True
            if exc.code != backend.ERR_OPERATION_INVALID:  # destroy of a domain that is not running
                raise
    return True


def remove_volumes(conn, pool: str, name: str, type_name: str) -> list:
    """Delete the overlay, the seed, then the marks; returns the names it deleted."""
    try:
        present = set(conn.volume_names(pool))
    except backend.LibvirtCallError as exc:
        if exc.code == backend.ERR_NO_STORAGE_POOL:
            return []  # no pool, no volumes
        raise
    deleted = []
    for volume in ids.instance_volumes(name, type_name):
        if volume not in present:
            continue
        try:
            conn.volume_delete(pool, volume)
            deleted.append(volume)
        except backend.LibvirtCallError as exc:
            if exc.code != backend.ERR_NO_STORAGE_VOL:
                raise
    return deleted


def verify_gone(conn, pool: str, name: str, type_name: str) -> None:
    try:
        conn.domain_state(name)
    except backend.LibvirtCallError as exc:
        if exc.code != backend.ERR_NO_DOMAIN:
            raise
    else:
        raise Transient("domain %s is still defined after undefine" % name)
    try:
        left = set(conn.volume_names(pool)) & set(ids.instance_volumes(name, type_name))
    except backend.LibvirtCallError as exc:
        if exc.code == backend.ERR_NO_STORAGE_POOL:
            return
        raise
    if left:
        raise Transient("volumes %s are still in pool %s" % (", ".join(sorted(left)), pool))
