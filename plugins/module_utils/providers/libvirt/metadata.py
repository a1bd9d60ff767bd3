# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The marks: the domain's ``<metadata>`` element and the marks volume beside its disks.

libvirt has no labels, so the marks (managed, uid, createdAt, installation) live in a metadata
element in the type's own XML namespace, written in the same DomainDefineXML that creates the
domain: a domain of ours never exists unmarked, and ``kvm`` never reads ``kvm2``'s element (nor
the other way round). Volumes cannot hold metadata, so each instance also has a small marks
volume with the same facts as JSON, written before its other volumes and deleted after them:
volumes left without a domain (a crash mid-create, a domain removed by hand) stay findable.

The element also keeps ``port``, the proxy port the domain was created for (fixed at creation:
the seed's cloud-init was made for it; a domain made before it was recorded has none, and
``fixed_fields`` cannot tell). With ``auth`` it also keeps ``passwd``, the password file line
the seed's user-data gave the guest (``user:$6$...``, the hash only, never the password): a
domain's credentials are fixed at creation, and this is how ``sync_auth`` knows them without
reading the seed back.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import xml.etree.ElementTree as ET

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import timestamps

NAMESPACE_BASE = "https://crawl.example.com/egress-proxies/libvirt/"
PREFIX = "egress"
ELEMENT = "instance"
MARKS_VERSION = 1


def namespace(type_name: str) -> str:
    """Each registered type has its own namespace, so neither adopts the other's domains."""
    return NAMESPACE_BASE + type_name


@dataclasses.dataclass(frozen=True)
class Marks:
    managed: bool
    uid: str
    created_at: datetime.datetime | None
    installation: str
    passwd: str = ""  # the password file line the guest was given at creation; "": no auth
    provider: str = ""  # the configured provider that made it; "": made before it was recorded
    port: int = 0  # the proxy port it was created for; 0: made before it was recorded

    def owned_by(self, provider: str) -> bool:
        """Two providers on one host see the same domains: each lists only its own (and those
        made before the provider was recorded, as ``names.provider_owns`` says)."""
        return names.provider_owns({names.LABEL_PROVIDER: self.provider}, provider)


class MarksError(ValueError):
    """A marks element or volume that exists but cannot be parsed."""


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def format_time(value: datetime.datetime) -> str:
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def element_xml(*fields, **named) -> str:
    """The bare element of ``attributes(*fields, **named)`` as libvirt's metadata API takes and
    returns it (no namespace prefix)."""
    node = ET.Element(ELEMENT)
    for key, value in attributes(*fields, **named).items():
        node.set(key, value)
    return ET.tostring(node, encoding="unicode")


def attributes(
    uid: str,
    created_at: datetime.datetime,
    installation: str,
    passwd: str = "",
    provider: str = "",
    port: int = 0,
) -> dict:
    """The element's attributes (domain_xml writes the same ones); ``passwd`` only with auth,
    ``provider`` (the configured provider that made it) and ``port`` when given."""
    attrs = {
        "managed": names.LABEL_MANAGED_VALUE,
        "uid": uid,
        "createdAt": format_time(created_at),
        "installation": installation,
    }
    if provider:
        attrs["provider"] = provider
    if port:
        attrs["port"] = str(int(port))
    if passwd:
        attrs["passwd"] = passwd.rstrip("\n")  # one line; a newline would not survive as an attribute
    return attrs


def parse_element(text: str) -> Marks:
    try:
        node = ET.fromstring(text)
    except ET.ParseError as exc:
        raise MarksError("metadata element does not parse: %s" % exc) from None
    if node.tag.split("}")[-1] != ELEMENT:
        raise MarksError("metadata element is <%s>, want <%s>" % (node.tag, ELEMENT))
    return Marks(
        managed=node.get("managed") == names.LABEL_MANAGED_VALUE,
        uid=node.get("uid", ""),
        created_at=timestamps.parse(node.get("createdAt")),
        installation=node.get("installation", ""),
        passwd=node.get("passwd", ""),
        provider=node.get("provider", ""),
        port=int(node.get("port")) if (node.get("port") or "").isdigit() else 0,
    )


def volume_json(
    type_name: str, name: str, uid: str, created_at, installation: str, provider: str = ""
) -> bytes:
    doc = {
        "version": MARKS_VERSION,
        "type": type_name,
        "name": name,
        names.LABEL_MANAGED: names.LABEL_MANAGED_VALUE,
        names.LABEL_UID: uid,
        names.LABEL_INSTALL: installation,
        "createdAt": format_time(created_at),
    }
    if provider:
        doc[names.LABEL_PROVIDER] = provider
    return (json.dumps(doc, sort_keys=True) + "\n").encode("utf-8")


def parse_volume_json(data: bytes, type_name: str, name: str) -> Marks:
    try:
        doc = json.loads(data.rstrip(b"\0").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise MarksError("marks volume does not parse: %s" % exc) from None
    if not isinstance(doc, dict) or doc.get("type") != type_name or doc.get("name") != name:
        raise MarksError("marks volume belongs to another type or name")
    return Marks(
        managed=doc.get(names.LABEL_MANAGED) == names.LABEL_MANAGED_VALUE,
        uid=str(doc.get(names.LABEL_UID, "")),
        created_at=timestamps.parse(doc.get("createdAt")),
        installation=str(doc.get(names.LABEL_INSTALL, "")),
        provider=str(doc.get(names.LABEL_PROVIDER, "")),
    )
