# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ``local:`` config block."""

from __future__ import annotations

import ipaddress
import os
import shutil

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config.base import BlockModel, check_cidrs
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.pydantic_compat import (
    Field,
    field_validator,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.path_trust import (
    root_create_reason,
    root_unsafe_reason,
)

DEFAULT_STATE_DIR = "/var/lib/egress-proxies/local"
DEFAULT_ADDRESS_RANGE = "127.77.0.0/16"
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
SBIN = "/usr/sbin:/usr/local/sbin"  # where Debian's squid lives, often not on a module's PATH


def find_squid(name: str) -> str | None:
    """The file ``squidBinary`` names: a path, or a name looked up on PATH and then in sbin."""
    return shutil.which(name) or shutil.which(name, path=SBIN)


def refusal(path: str) -> str:
    """Why root must not run ``path`` or write under it (helpers/path_trust.py), or ``""``."""
    reason = root_unsafe_reason(path)
    return "%s is refused: %s" % (excerpt(path), reason) if reason else ""


def state_dir_refusal(state_dir: str) -> str:
    """Why root must not write under ``state_dir``, or make it in its nearest existing ancestor
    (a sticky ``/tmp`` is fine there: what root makes is root's), or ``""``."""
    probe = os.path.normpath(state_dir)
    while probe != "/" and not os.path.lexists(probe):
        probe = os.path.dirname(probe)
    if probe == os.path.normpath(state_dir):
        return refusal(probe)
    reason = root_create_reason(probe)
    return "%s is refused: %s" % (excerpt(state_dir), reason) if reason else ""


class LocalConfig(BlockModel):
    """Where instances live and who may use them."""

    state_dir: str = Field(default=DEFAULT_STATE_DIR, min_length=1)
    squid_binary: str = Field(default="squid", min_length=1)
    address_range: str = DEFAULT_ADDRESS_RANGE
    allowed_source_ranges: list[str] = Field(default_factory=lambda: ["127.0.0.0/8"], min_length=1)

    @field_validator("state_dir")
    @classmethod
    def _absolute_state_dir(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must be an absolute path")
        if any(not ch.isprintable() for ch in value):
            raise ValueError("%s contains NUL or control characters" % excerpt(value))
        probe = value
        while probe != "/" and not os.path.lexists(probe):  # it is created on first use
            probe = os.path.dirname(probe)
        if not os.path.isdir(probe):
            raise ValueError("%s is not a directory" % excerpt(probe))
        if state_dir_refusal(value):  # root writes under it (issue 40)
            raise ValueError(state_dir_refusal(value))
        return value

    @field_validator("squid_binary")
    @classmethod
    def _trusted_squid_binary(cls, value: str) -> str:
        found = find_squid(value)  # a missing binary is the provider's SquidNotFound, not a config error
        if found and refusal(found):  # root runs it (issue 40)
            raise ValueError(refusal(found))
        return value

    @field_validator("address_range")
    @classmethod
    def _loopback_range(cls, value: str) -> str:
        try:
            network = ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise ValueError("%s is not a CIDR range: %s" % (excerpt(value), str(exc)[:100])) from None
        if network.version != 4 or not network.subnet_of(LOOPBACK):
            raise ValueError("must be an IPv4 range inside 127.0.0.0/8, e.g. 127.77.0.0/16")
        if network.num_addresses < 4:
            raise ValueError("must hold at least 4 addresses")
        return value

    def conflict_with(self, other) -> str:
        """Two local providers whose ranges overlap hand one address to two Squids: the second
        dies with "Address already in use" while the first answers for it. One stateDir is one
        allocation store, so providers sharing it may share the range."""
        mine, theirs = ipaddress.ip_network(self.address_range), ipaddress.ip_network(other.address_range)
        if mine.overlaps(theirs) and os.path.normpath(self.state_dir) != os.path.normpath(other.state_dir):
            return "addressRange %s overlaps %s" % (self.address_range, other.address_range)
        return ""

    _cidrs = field_validator("allowed_source_ranges")(check_cidrs)
