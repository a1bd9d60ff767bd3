# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ``local:`` config block."""

from __future__ import annotations

import ipaddress

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config_base import BlockModel, check_cidrs
from ansible_collections.crawl.egress_proxies.plugins.module_utils.pydantic_compat import (
    Field,
    field_validator,
)

DEFAULT_STATE_DIR = "/var/lib/egress-proxies/local"
DEFAULT_ADDRESS_RANGE = "127.77.0.0/16"
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")


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
        return value

    @field_validator("address_range")
    @classmethod
    def _loopback_range(cls, value: str) -> str:
        try:
            network = ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise ValueError("%r is not a CIDR range: %s" % (value, exc)) from None
        if network.version != 4 or not network.subnet_of(LOOPBACK):
            raise ValueError("must be an IPv4 range inside 127.0.0.0/8, e.g. 127.77.0.0/16")
        if network.num_addresses < 4:
            raise ValueError("must hold at least 4 addresses")
        return value

    @field_validator("allowed_source_ranges")
    @classmethod
    def _cidrs(cls, value):
        return check_cidrs(value)
