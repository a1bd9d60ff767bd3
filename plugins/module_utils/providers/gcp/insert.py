# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Pure builders of the request bodies the provider sends: the instance and the firewall rule.

The bodies are plain dicts in the Compute Engine REST shape (the field names of the public API
reference), so a test can compare them exactly and the SDK adapter parses them strictly into
its own message types (an unknown field fails loudly). Nothing here performs a call.
"""

from __future__ import annotations

import dataclasses
import hashlib

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import cloud_init_auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import labels
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.config import (
    ADDRESS_EXTERNAL,
    network_url,
)

USER_DATA_KEY = "user-data"
DISK_TYPE = "pd-balanced"


@dataclasses.dataclass(frozen=True)
class InsertSettings:
    """The slice of the config the instance body depends on."""

    project: str
    installation: str
    network: str
    network_tag: str
    disk_size_gb: int
    address_mode: str
    provider: str = ""  # the configured provider's name, marked on every instance


def machine_type_url(zone: str, machine_type: str) -> str:
    return machine_type if "/" in machine_type else "zones/%s/machineTypes/%s" % (zone, machine_type)


def user_data(req) -> str:
    """What the VM's cloud-init gets: the request's, and with ``auth`` the collection's part
    beside it (cloud_init_auth: the password's hash, never the password)."""
    if req.auth is None:
        return req.cloud_init
    return cloud_init_auth.with_auth(req.cloud_init, req.auth.passwd_line())


def build_instance(req, settings: InsertSettings) -> dict:
    """The ``instances.insert`` body for ``req`` (a ``contract.CreateRequest``)."""
    zone = req.placement.zone
    interface = {"network": network_url(settings.project, settings.network)}
    if settings.address_mode == ADDRESS_EXTERNAL:
        # Ephemeral external IP: each proxy gets its own egress address.
        interface["accessConfigs"] = [{"name": "External NAT", "type": "ONE_TO_ONE_NAT"}]
    metadata = [{"key": labels.UID_METADATA_KEY, "value": req.uid}]
    if req.cloud_init:
        metadata.append({"key": USER_DATA_KEY, "value": user_data(req)})
    metadata.append({"key": labels.PORT_METADATA_KEY, "value": str(int(req.port))})
    return {
        "name": req.name,
        "machineType": machine_type_url(zone, req.placement.machine_type),
        "labels": labels.marks(req.uid, settings.installation, settings.provider),
        "tags": {"items": [settings.network_tag]},
        "disks": [
            {
                "boot": True,
                "autoDelete": True,  # Delete must remove everything Create made
                "type": "PERSISTENT",
                "initializeParams": {
                    "sourceImage": req.placement.image,
                    "diskSizeGb": str(settings.disk_size_gb),
                    "diskType": "zones/%s/diskTypes/%s" % (zone, DISK_TYPE),
                },
            }
        ],
        "networkInterfaces": [interface],
        "metadata": {"items": metadata},
    }


def user_data_of(instance: dict) -> str:
    """The ``user-data`` metadata value of an instance as the API returns it (``""`` if none)."""
    for item in (instance.get("metadata") or {}).get("items") or []:
        if item.get("key") == USER_DATA_KEY:
            return item.get("value") or ""
    return ""


def describe(body: dict) -> dict:
    """A loggable copy of an instance body: metadata values replaced by their byte counts."""
    safe = dict(body)
    items = (body.get("metadata") or {}).get("items") or []
    safe["metadata"] = {
        "items": [{"key": i.get("key"), "bytes": len(str(i.get("value", "")).encode("utf-8"))} for i in items]
    }
    return safe


def firewall_name(provider_name: str, installation: str, port: int) -> str:
    """``ep-<provider>-<port>-<hash>``: one rule per provider and port, at most 63 characters.

    The hash of installation and provider name keeps two installations' rules apart even when
    their provider names are equal and long names are cut.
    """
    digest = hashlib.sha256(("%s/%s" % (installation, provider_name)).encode("utf-8")).hexdigest()[:8]
    head = "ep-%s" % provider_name
    tail = "-%d-%s" % (port, digest)
    return (head[: 63 - len(tail)].rstrip("-") + tail).lower()


def build_firewall(provider_name: str, installation: str, port: int, project: str, config) -> dict:
    """The ingress rule that lets ``firewallSourceRanges`` reach ``port`` on tagged instances."""
    return {
        "name": firewall_name(provider_name, installation, port),
        "description": "crawl.egress_proxies: proxy port %d for provider %s (installation %s)"
        % (port, provider_name, installation),
        "network": network_url(project, config.network),
        "direction": "INGRESS",
        "priority": 1000,
        "targetTags": [config.network_tag],
        "sourceRanges": sorted(config.firewall_source_ranges),
        "allowed": [{"IPProtocol": "tcp", "ports": [str(port)]}],
    }


def firewall_differs(existing: dict, wanted: dict) -> bool:
    """True when the live rule no longer matches what the config asks for."""

    def norm(rule):
        allowed = sorted(
            (a.get("IPProtocol", ""), tuple(sorted(a.get("ports") or []))) for a in rule.get("allowed") or []
        )
        network = (rule.get("network") or "").split("/global/networks/")[-1]
        return (
            sorted(rule.get("sourceRanges") or []),
            sorted(rule.get("targetTags") or []),
            allowed,
            network.split("/")[-1],
            rule.get("direction", "INGRESS"),
        )

    return norm(existing) != norm(wanted)
