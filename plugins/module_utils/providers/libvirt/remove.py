# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Delete: destroy, undefine, then the instance's volumes; idempotent at every step.

Each step tolerates "already done" (not running, no such domain, no such volume, no pool), so
a delete interrupted anywhere finishes on the next call. A domain that exists without this
type's marks, or with another installation's (also on a volume set left without its domain),
is not ours and is refused (Permanent, saying whose it is), never destroyed. The marks volume is
removed last, so a half-deleted set stays findable by list_by_tag. Returns only when the domain
and every volume are gone (checked by reading back).
"""

from __future__ import annotations

import logging

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import ownership
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    ids,
    inspect,
    metadata,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.classify import (
    Permanent,
    Transient,
)

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")

MARKS_LIMIT = 4096


def _refuse_foreign(what: str, marks, installation: str, provider: str = "") -> None:
    refusal = ownership.foreign(
        what,
        marks is not None and marks.managed,
        marks.installation if marks else "",
        installation,
        marks.provider if marks else "",
        provider,
    )
    if refusal:
        raise Permanent(refusal)


def remove_domain(conn, pool: str, name: str, type_name: str, installation: str, provider: str = "") -> bool:
    """Destroy and undefine; ``False`` when there was no domain (its volume set is then checked:
    a leftover of another installation, or of another ``provider`` on this host, is refused the
    same way)."""
    try:
        marks = inspect.read_marks(conn, name, type_name)
    except backend.LibvirtCallError as exc:
        if exc.code == backend.ERR_NO_DOMAIN:
            _refuse_foreign_leftover(conn, pool, name, type_name, installation, provider)
            return False
        raise
    _refuse_foreign("domain %s (%s marks)" % (name, type_name), marks, installation, provider)
    for step in (conn.domain_destroy, conn.domain_undefine):
        try:
            step(name)
        except backend.LibvirtCallError as exc:
            if exc.code == backend.ERR_NO_DOMAIN:
                return True
            if exc.code != backend.ERR_OPERATION_INVALID:  # destroy of a domain that is not running
                raise
    return True


def _refuse_foreign_leftover(
    conn, pool: str, name: str, type_name: str, installation: str, provider: str = ""
) -> None:
    volume = ids.marks_volume(name, type_name)
    try:
        data = conn.volume_download(pool, volume, MARKS_LIMIT)
    except backend.LibvirtCallError as exc:
        if exc.code in (backend.ERR_NO_STORAGE_VOL, backend.ERR_NO_STORAGE_POOL):
            return  # no marks volume: nothing of an installation's is left, or only our own parts
        raise
    try:
        marks = metadata.parse_volume_json(data, type_name, name)
    except metadata.MarksError as exc:
        raise Permanent("volume %s cannot be read as marks (%s): refusing to delete its set" % (volume, exc))
    _refuse_foreign("volume set %s (%s)" % (name, volume), marks, installation, provider)


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
