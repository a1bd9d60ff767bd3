# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Reading a Compute Engine instance (REST dict) into a ``contract.Instance``, and the ids.

The provider id is ``zones/<zone>/instances/<name>``: self-contained (the zone travels with
it, the project comes from the config) and parsed strictly. State table (reference §5):

=========================================  ==========  ============
status                                     address     state
=========================================  ==========  ============
PROVISIONING, STAGING, REPAIRING           any         Provisioning
RUNNING                                    none        Provisioning
RUNNING                                    set         Running
STOPPING, STOPPED, SUSPENDING, SUSPENDED   any         Stopped
TERMINATED                                 any         Terminated
anything else                              any         Stopped
=========================================  ==========  ============

The address is the NAT IP of the first access config of the first NIC, or, with
``addressMode: internal``, the first NIC's internal IP.
"""

from __future__ import annotations

import re

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import timestamps
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import labels
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.config import (
    ADDRESS_INTERNAL,
)

_NAME = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
_ZONE = r"[a-z]+-[a-z]+[0-9]+-[a-z]"
_ID = re.compile(r"^zones/(%s)/instances/(%s)$" % (_ZONE, _NAME))
NAME_RE = re.compile(r"^%s$" % _NAME)
ZONE_RE = re.compile(r"^%s$" % _ZONE)

_PROVISIONING = frozenset({"PROVISIONING", "STAGING", "REPAIRING", "PENDING"})
_STOPPED = frozenset({"STOPPING", "STOPPED", "SUSPENDING", "SUSPENDED"})


def format_id(zone: str, name: str) -> str:
    return "zones/%s/instances/%s" % (zone, name)


def parse_id(provider_id) -> tuple:
    """``(zone, name)``; ``ValueError`` for anything that is not exactly our shape."""
    match = _ID.fullmatch(provider_id) if isinstance(provider_id, str) else None
    if not match:
        raise ValueError("malformed gcp provider id %r: want zones/<zone>/instances/<name>" % (provider_id,))
    return match.group(1), match.group(2)


def last_segment(url: str) -> str:
    return (url or "").rstrip("/").rsplit("/", 1)[-1]


def map_state(status: str, ip: str) -> str:
    if status in _PROVISIONING:
        return contract.PROVISIONING
    if status == "RUNNING":
        return contract.RUNNING if ip else contract.PROVISIONING
    if status == "TERMINATED":
        return contract.TERMINATED
    return contract.STOPPED  # _STOPPED and anything unknown: will not recover by itself


def address_of(instance: dict, address_mode: str) -> str:
    nics = instance.get("networkInterfaces") or []
    if not nics:
        return ""
    if address_mode == ADDRESS_INTERNAL:
        return nics[0].get("networkIP", "") or ""
    configs = nics[0].get("accessConfigs") or []
    return (configs[0].get("natIP", "") or "") if configs else ""


def to_instance(item: dict, zone: str, address_mode: str) -> contract.Instance:
    name = item.get("name", "")
    ip = address_of(item, address_mode)
    state = map_state(item.get("status", ""), ip)
    return contract.Instance(
        id=format_id(last_segment(item.get("zone", "")) or zone, name),
        name=name,
        uid=labels.uid_of(item),
        state=state,
        ip=ip if state == contract.RUNNING else "",
        created_at=timestamps.parse(item.get("creationTimestamp")),
        installation=(item.get("labels") or {}).get(names.LABEL_INSTALL, ""),
        made_by=(item.get("labels") or {}).get(names.LABEL_PROVIDER, ""),
    )
