# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The seam between the provider and libvirt: one ``Connection`` per host, every method one
blocking libvirt call (or two: a lookup plus the call), and the one error type it raises.

The production adapter (libvirt_backend.py) implements it over libvirt-python; the unit tests'
fake (tests/fakes/libvirt_fake.py) implements it in memory and raises the same errors with the
same codes. Nothing here applies budgets: guard.py wraps every call of either implementation.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

# libvirt's own numbers (virErrorNumber, virErrorDomain, virDomainState, virStoragePoolState):
# fixed by libvirt's stable ABI, written out so the provider and the fake need no libvirt import.
ERR_INTERNAL_ERROR = 1
ERR_NO_SUPPORT = 3
ERR_INVALID_ARG = 8
ERR_OPERATION_FAILED = 9
ERR_XML_ERROR = 27
ERR_XML_DETAIL = 35
ERR_SYSTEM_ERROR = 38
ERR_RPC = 39
ERR_NO_DOMAIN = 42
ERR_AUTH_FAILED = 45
ERR_NO_STORAGE_POOL = 49
ERR_NO_STORAGE_VOL = 50
ERR_OPERATION_INVALID = 55
ERR_CONFIG_UNSUPPORTED = 67
ERR_OPERATION_TIMEOUT = 68
ERR_NO_DOMAIN_METADATA = 80
ERR_OPERATION_UNSUPPORTED = 84
ERR_SSH = 85
ERR_AGENT_UNRESPONSIVE = 86
ERR_ACCESS_DENIED = 88
ERR_STORAGE_VOL_EXIST = 90
ERR_AUTH_UNAVAILABLE = 94
ERR_LIBSSH = 98

FROM_SSH = 50
FROM_LIBSSH = 66

DOMAIN_NOSTATE = 0
DOMAIN_RUNNING = 1
DOMAIN_BLOCKED = 2
DOMAIN_PAUSED = 3
DOMAIN_SHUTDOWN = 4
DOMAIN_SHUTOFF = 5
DOMAIN_CRASHED = 6
DOMAIN_PMSUSPENDED = 7

POOL_INACTIVE = 0
POOL_BUILDING = 1
POOL_RUNNING = 2
POOL_DEGRADED = 3
POOL_INACCESSIBLE = 4
POOL_STATES = {0: "inactive", 1: "building", 2: "running", 3: "degraded", 4: "inaccessible"}

ADDRESS_SOURCES = ("agent", "lease", "arp")


class LibvirtCallError(Exception):
    """A libvirt call failed; ``code`` and ``domain`` are libvirt's virErrorNumber/virErrorDomain."""

    def __init__(self, code: int, message: str, domain: int = 0):
        self.code = code
        self.domain = domain
        super().__init__(message)


@dataclasses.dataclass(frozen=True)
class PoolInfo:
    state: int
    capacity: int
    allocation: int
    available: int


@dataclasses.dataclass(frozen=True)
class VolumeInfo:
    capacity: int
    allocation: int


class Upload(Protocol):
    """A stream into one volume; ``abort`` is safe to call after a failure."""

    def send(self, data: bytes) -> None: ...
    def finish(self) -> None: ...
    def abort(self) -> None: ...


class Connection(Protocol):
    """One host's libvirt connection. Methods block; the guard bounds them."""

    def close(self) -> None: ...

    def is_alive(self) -> bool: ...

    def lib_version(self) -> int: ...

    def hostname(self) -> str: ...

    def available_memory(self) -> int:
        """Bytes the host can give a new guest: free plus buffers plus page cache."""

    def domain_names(self) -> list: ...

    def domain_state(self, name: str) -> int: ...

    def domain_state_reason(self, name: str) -> tuple:
        """``(state, reason)``: libvirt's virDomainState and the state's reason code."""

    def max_vcpus(self, virt_type: str) -> int:
        """The most vCPUs a guest of ``virt_type`` may have; an error when the host has no such
        type (for ``kvm``: /dev/kvm cannot be opened)."""

    def capabilities(self) -> str:
        """The host's capabilities XML (virConnectGetCapabilities: its CPU and its features)."""

    def domain_metadata(self, name: str, uri: str) -> str: ...

    def domain_define(self, xml: str) -> None: ...

    def domain_start(self, name: str) -> None: ...

    def domain_resume(self, name: str) -> None: ...

    def domain_wakeup(self, name: str) -> None: ...

    def domain_destroy(self, name: str) -> None: ...

    def domain_undefine(self, name: str) -> None:
        """Undefine with NVRAM, managed save, snapshot and checkpoint metadata."""

    def domain_addresses(self, name: str, source: str) -> list:
        """``[(family, address), ...]`` from ``agent``, ``lease`` or ``arp``."""

    def pool_info(self, pool: str) -> PoolInfo: ...

    def pool_refresh(self, pool: str) -> None: ...

    def volume_names(self, pool: str) -> list: ...

    def volume_info(self, pool: str, name: str) -> VolumeInfo: ...

    def volume_xml(self, pool: str, name: str) -> str: ...

    def volume_path(self, pool: str, name: str) -> str: ...

    def volume_create(self, pool: str, xml: str) -> None: ...

    def volume_delete(self, pool: str, name: str) -> None: ...

    def volume_upload(self, pool: str, name: str, length: int) -> Upload: ...

    def volume_download(self, pool: str, name: str, limit: int) -> bytes: ...


class Dialer(Protocol):
    """Opens a ``Connection`` to one host; reads the SSH key and known_hosts on every call."""

    def dial(self, host) -> Connection: ...
