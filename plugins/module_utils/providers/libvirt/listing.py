# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""ListByTag: every host, this type's managed domains of this installation, and the volume
sets left without a domain.

A host that cannot be dialled or listed fails the whole call (GC must never act on a partial
view). One domain whose marks or state cannot be read is skipped with a warning, unless the
deadline ended, which fails the call. A marks volume whose domain is gone (a crash mid-create,
a domain undefined by hand) is listed as a ``Terminated`` instance with the same id: its UID
and CreatedAt come from the marks volume, GC judges it like any instance, and ``delete`` on
that id removes the volumes (a GC blind spot of the reference's providers).
"""

from __future__ import annotations

import logging

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    ids,
    inspect,
    metadata,
)

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")

MARKS_LIMIT = 4096


def host_instances(conn, host, type_name: str, installation: str, deadline, provider: str = "") -> list:
    """This installation's domains on ``host`` that ``provider`` made (or that predate the
    provider mark), then its leftover volume sets."""
    out = []
    domains = conn.domain_names()
    for name in sorted(domains):
        deadline.check("list")
        try:
            marks = inspect.read_marks(conn, name, type_name)
            if marks is None or not marks.managed or marks.installation != installation:
                continue
            if not marks.owned_by(provider):
                continue  # another provider's on this host
            out.append(inspect.instance(conn, host.name, name, marks, deadline))
        except backend.LibvirtCallError as exc:
            if exc.code == backend.ERR_NO_DOMAIN:
                continue  # deleted while we listed
            deadline.check("list")
            log.warning(
                "libvirt list host=%s skipping domain %s: its marks or state cannot be read: %s",
                host.name,
                name,
                exc,
            )
        except metadata.MarksError as exc:
            log.warning("libvirt list host=%s skipping domain %s: %s", host.name, name, exc)
    out.extend(leftovers(conn, host, type_name, installation, set(domains), deadline, provider))
    return out


def leftovers(
    conn, host, type_name: str, installation: str, domains: set, deadline, provider: str = ""
) -> list:
    """Volume sets of this type whose domain does not exist, as Terminated instances."""
    try:
        volumes = conn.volume_names(host.pool)
    except backend.LibvirtCallError as exc:
        if exc.code == backend.ERR_NO_STORAGE_POOL:
            return []  # nothing can be left in a pool that does not exist
        raise
    out = []
    for volume in sorted(volumes):
        name = ids.name_of_marks_volume(volume, type_name)
        if name is None or name in domains:
            continue
        deadline.check("list")
        try:
            marks = metadata.parse_volume_json(
                conn.volume_download(host.pool, volume, MARKS_LIMIT), type_name, name
            )
        except (backend.LibvirtCallError, metadata.MarksError) as exc:
            deadline.check("list")
            log.warning("libvirt list host=%s skipping volume %s: %s", host.name, volume, exc)
            continue
        if not marks.managed or marks.installation != installation or not marks.owned_by(provider):
            continue
        out.append(
            contract.Instance(
                id=ids.format_id(host.name, name),
                name=name,
                uid=marks.uid,
                state=contract.TERMINATED,
                created_at=marks.created_at,
                installation=marks.installation,
            )
        )
    return out
