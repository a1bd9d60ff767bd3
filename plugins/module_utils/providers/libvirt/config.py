# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ``kvm:`` / ``kvm2:`` config block (the reference's KVMConfig), shared by both types.

Host names and image keys end up inside provider ids (``hosts/<host>/domains/<name>``) and
volume names, so they are restricted to short DNS labels: nothing a user writes can add a
separator. Parsing only reads the block; the credential files are read on every dial.

``sshKeyFile`` and ``knownHostsFile`` left out of the block come from the environment
(``EGRESS_PROXIES_LIBVIRT_SSH_KEY_FILE``, ``EGRESS_PROXIES_LIBVIRT_KNOWN_HOSTS_FILE``), as gcp's
missing ``credentialsFile`` means application default credentials: AWX injects credential files
under random names and can only tell their paths through variables (the "Egress proxies libvirt
SSH" credential type sets these two).
"""

from __future__ import annotations

import os
import re

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config.base import (
    BlockModel,
    matching,
    one_of,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.pydantic_compat import (
    Field,
    field_validator,
    model_validator,
)

IDENTIFIER_PATTERN = r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?"
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
_SHA256 = re.compile(r"[0-9a-f]{64}")
_ADDRESS = re.compile(
    r"[A-Za-z0-9]([-.A-Za-z0-9]*[A-Za-z0-9])?(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
)
_USER = re.compile(r"[a-z_][-a-z0-9_.]{0,31}")
_POOL = re.compile(r"[A-Za-z0-9][-_.A-Za-z0-9]{0,63}")
_BRIDGE = re.compile(r"[A-Za-z0-9][-_.A-Za-z0-9]{0,14}")

DEFAULT_DISK_SIZE_GB = 10
SSH_KEY_FILE_ENV = "EGRESS_PROXIES_LIBVIRT_SSH_KEY_FILE"
KNOWN_HOSTS_FILE_ENV = "EGRESS_PROXIES_LIBVIRT_KNOWN_HOSTS_FILE"
FORMATS = ("qcow2", "raw")
FIRMWARES = ("bios", "uefi")
DOMAIN_TYPES = ("kvm", "qemu")


def check_identifier(value: str, what: str) -> str:
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        raise ValueError(
            "%s %r must be 1-32 characters of lowercase letters, digits and '-', starting and "
            "ending with a letter or digit (it becomes part of ids and volume names)" % (what, value)
        )
    return value


def check_http_url(value: str) -> str:
    if not (value.startswith("http://") or value.startswith("https://")) or len(value) < 9:
        raise ValueError("%r must be an http:// or https:// URL" % (value,))
    if any(c.isspace() for c in value):
        raise ValueError("%r must not contain whitespace" % (value,))
    return value


class ImageSpec(BlockModel):
    """A catalogue image: downloaded once per host into the pool, verified by its sha256."""

    url: str
    sha256: str
    format: str = "qcow2"
    firmware: str = "bios"

    _url = field_validator("url")(check_http_url)
    _sha256 = field_validator("sha256")(matching(_SHA256, "must be 64 lowercase hexadecimal characters"))
    _format = field_validator("format")(one_of(FORMATS))
    _firmware = field_validator("firmware")(one_of(FIRMWARES))


class MachineTypeSpec(BlockModel):
    vcpus: int = Field(ge=1, le=256)
    memory_mib: int = Field(alias="memoryMiB", ge=64, le=4 * 1024 * 1024)


class HostSpec(BlockModel):
    """One hypervisor, reached as ``user@address`` over SSH."""

    name: str
    address: str
    user: str = "root"
    socket: str = ""
    pool: str = "default"
    bridge: str = ""
    domain_type: str = "kvm"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_identifier(value, "host name")

    _address = field_validator("address")(
        matching(_ADDRESS, "{!r} must be a host name or IP address, optionally with :port")
    )
    _user = field_validator("user")(matching(_USER, "{!r} is not a valid user name"))

    @field_validator("socket")
    @classmethod
    def _socket(cls, value: str) -> str:
        if value and (not value.startswith("/") or any(c in value for c in "&?#'\" \t\n")):
            raise ValueError("must be an absolute path without spaces, quotes or URL characters")
        return value

    _pool = field_validator("pool")(matching(_POOL, "{!r} is not a libvirt pool name"))
    _bridge = field_validator("bridge")(
        matching(_BRIDGE, "{!r} is not a bridge interface name (1-15 characters)", optional=True)
    )
    _domain_type = field_validator("domain_type")(
        one_of(DOMAIN_TYPES, " (qemu is TCG emulation, without KVM)")
    )


class LibvirtConfig(BlockModel):
    """The whole block; ``hosts`` is required, everything else has a default or is optional."""

    ssh_key_file: str = Field(min_length=1)
    known_hosts_file: str = ""
    insecure_ignore_host_key: bool = False
    disk_size_gb: int = Field(default=DEFAULT_DISK_SIZE_GB, ge=1, le=65536)
    vendor_data: str = Field(default="", repr=False)
    install_guest_agent: bool = False
    images: dict[str, ImageSpec] = Field(default_factory=dict)
    machine_types: dict[str, MachineTypeSpec] = Field(min_length=1)
    hosts: list[HostSpec] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _paths_from_environment(cls, data):
        """A key path the block leaves out is the one its variable names, when it is set."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "sshKeyFile" not in data and os.environ.get(SSH_KEY_FILE_ENV):
            data["sshKeyFile"] = os.environ[SSH_KEY_FILE_ENV]
        if (
            "knownHostsFile" not in data
            and data.get("insecureIgnoreHostKey") is not True
            and os.environ.get(KNOWN_HOSTS_FILE_ENV)
        ):
            data["knownHostsFile"] = os.environ[KNOWN_HOSTS_FILE_ENV]
        return data

    @field_validator("ssh_key_file", "known_hosts_file")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if value and not value.startswith("/"):
            raise ValueError("must be an absolute path")
        return value

    @field_validator("images", "machine_types")
    @classmethod
    def _keys(cls, value: dict, info) -> dict:
        what = {"images": "image key", "machine_types": "machine type"}[info.field_name]
        for key in value:
            check_identifier(key, what)
        return value

    @field_validator("hosts")
    @classmethod
    def _unique_hosts(cls, value: list) -> list:
        seen = set()
        for host in value:
            if host.name in seen:
                raise ValueError("host name %r is used twice" % host.name)
            seen.add(host.name)
        return value

    @model_validator(mode="after")
    def _host_key_policy(self):
        if bool(self.known_hosts_file) == bool(self.insecure_ignore_host_key):
            raise ValueError(
                "set exactly one of knownHostsFile (verify host keys) and insecureIgnoreHostKey: true"
            )
        return self

    def host(self, name: str):
        for host in self.hosts:
            if host.name == name:
                return host
        return None
