# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Reading one domain back: its marks, its state and its address, as an ``Instance``.

The state table (the reference's kvm2 mapState):

  libvirt state                                   address   Instance state
  nostate                                         any       Provisioning
  running, blocked                                none      Provisioning
  running, blocked                                found     Running
  paused, shutdown, shutoff, crashed, pmsuspended any       Stopped
  anything else                                   any       Stopped

The address comes from the guest agent, then the DHCP lease, then the ARP table: the first
routable IPv4 (loopback, link-local, unspecified and multicast dropped). A source that fails is
skipped; only the operation's deadline ending is an error, so a cancelled Get is Transient and
never a false Provisioning. UID and CreatedAt are read from the marks on every call.
"""

from __future__ import annotations

import ipaddress
import logging

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    ids,
    metadata,
)

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")

_ACTIVE = (backend.DOMAIN_RUNNING, backend.DOMAIN_BLOCKED)


def map_state(state: int, ip: str) -> str:
    if state == backend.DOMAIN_NOSTATE:
        return contract.PROVISIONING
    if state in _ACTIVE:
        return contract.RUNNING if ip else contract.PROVISIONING
    return contract.STOPPED


def first_ipv4(addresses) -> str:
    for family, text in addresses:
        if family != "ipv4":
            continue
        try:
            addr = ipaddress.ip_address(text)
        except ValueError:
            continue  # the type tag and the literal disagree: not an address we can hand out
        if addr.version != 4:
            continue
        if addr.is_loopback or addr.is_link_local or addr.is_unspecified or addr.is_multicast:
            continue
        return str(addr)
    return ""


def address(conn, name: str, deadline) -> str:
    for source in backend.ADDRESS_SOURCES:
        try:
            found = first_ipv4(conn.domain_addresses(name, source))
        except Exception as exc:  # includes a call abandoned for its own budget
            deadline.check("address of %s" % name)  # the deadline ending is an error, not "no address"
            log.debug("libvirt address source=%s domain=%s skipped: %s", source, name, exc)
            continue
        if found:
            log.debug("libvirt address source=%s domain=%s ip=%s", source, name, found)
            return found
    deadline.check("address of %s" % name)
    return ""


def read_marks(conn, name: str, type_name: str):
    """The domain's marks in this type's namespace; ``None`` when the domain has none (not
    ours: unmanaged, or the other type's). NO_DOMAIN propagates."""
    try:
        text = conn.domain_metadata(name, metadata.namespace(type_name))
    except backend.LibvirtCallError as exc:
        if exc.code == backend.ERR_NO_DOMAIN_METADATA:
            return None
        raise
    return metadata.parse_element(text)


def instance(conn, host: str, name: str, marks, deadline) -> contract.Instance:
    state = conn.domain_state(name)
    ip = address(conn, name, deadline) if state in _ACTIVE else ""
    phase = map_state(state, ip)
    return contract.Instance(
        id=ids.format_id(host, name),
        name=name,
        uid=marks.uid if marks else "",
        state=phase,
        ip=ip if phase == contract.RUNNING else "",
        created_at=marks.created_at if marks else None,
        installation=marks.installation if marks else "",
        made_by=marks.provider if marks else "",
    )
