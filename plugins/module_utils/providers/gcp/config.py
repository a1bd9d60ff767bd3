# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ``gcp:`` config block: which project, network and addressing the provider uses.

Read by ``config.parse`` through the registry; validated before any provider is built, so a
bad value is reported with its exact path (``providers[0].gcp.project: ...``) and nothing is
created. Defaults are documented in docs/gcp-provider.md.
"""

from __future__ import annotations

import re

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config.base import (
    BlockModel,
    check_cidrs,
    check_dns_label,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.pydantic_compat import (
    Field,
    field_validator,
    model_validator,
)

DEFAULT_NETWORK = "default"
DEFAULT_NETWORK_TAG = "egress-proxy"
DEFAULT_DISK_SIZE_GB = 10
# How long get reports an insert that failed after acceptance, before answering NotFound again
# so callers create once more: long enough for a 10 s poll to see it, shorter than the 5 min
# quota retry (docs/gcp-provider.md, "Asynchronous insert failures").
DEFAULT_INSERT_FAILURE_WINDOW_SECONDS = 120
ADDRESS_EXTERNAL = "external"
ADDRESS_INTERNAL = "internal"

# Project ids: 6-30 characters, lowercase letters, digits and hyphens, starting with a letter;
# domain-scoped projects ("example.com:my-project") are allowed too.
_PROJECT = re.compile(r"^([a-z0-9][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$")
# A network given by name, or by a path/URL ending in global/networks/<name>.
_NETWORK = re.compile(r"^([-a-zA-Z0-9_.:/]*global/networks/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")


class GcpConfig(BlockModel):
    """One Compute Engine project and how the provider's VMs are networked."""

    project: str = Field(min_length=1)
    network: str = DEFAULT_NETWORK
    network_tag: str = DEFAULT_NETWORK_TAG
    disk_size_gb: int = Field(default=DEFAULT_DISK_SIZE_GB, ge=10, le=65536)
    address_mode: str = ADDRESS_EXTERNAL
    manage_firewall: bool = False
    firewall_source_ranges: list[str] = Field(default_factory=list)
    regions: list[str] = Field(default_factory=list)
    insert_failure_window_seconds: int = Field(default=DEFAULT_INSERT_FAILURE_WINDOW_SECONDS, ge=0, le=86400)
    credentials_file: str = ""
    api_endpoint: str = ""

    @field_validator("project")
    @classmethod
    def _project(cls, value: str) -> str:
        if not _PROJECT.match(value):
            raise ValueError(
                "%r is not a project id: 6-30 lowercase letters, digits and '-', starting with a letter"
                % (value,)
            )
        return value

    @field_validator("network")
    @classmethod
    def _network(cls, value: str) -> str:
        if not _NETWORK.match(value):
            raise ValueError("%r is not a network name or a .../global/networks/<name> path" % (value,))
        return value

    @field_validator("network_tag")
    @classmethod
    def _tag(cls, value: str) -> str:
        return check_dns_label(value, "networkTag")

    @field_validator("address_mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        if value not in (ADDRESS_EXTERNAL, ADDRESS_INTERNAL):
            raise ValueError("must be %r or %r" % (ADDRESS_EXTERNAL, ADDRESS_INTERNAL))
        return value

    _ranges = field_validator("firewall_source_ranges")(check_cidrs)

    @field_validator("regions")
    @classmethod
    def _regions(cls, value):
        for region in value:
            if not _REGION.match(region):
                raise ValueError("%r is not a region name such as europe-west1" % (region,))
        return list(value)

    @field_validator("credentials_file")
    @classmethod
    def _credentials(cls, value: str) -> str:
        if value and not value.startswith("/"):
            raise ValueError("must be an absolute path to a service-account key file")
        return value

    @field_validator("api_endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        if value and not re.match(r"^https?://[^/\s]+/?$", value):
            raise ValueError("must be a scheme and host such as https://compute.example.internal")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _firewall_needs_ranges(self):
        # An empty source list would make a rule that admits nobody (or, worse, be read as "any").
        if self.manage_firewall and not self.firewall_source_ranges:
            raise ValueError("firewallSourceRanges: required (at least one CIDR) when manageFirewall is true")
        return self


def network_url(project: str, network: str) -> str:
    """A network name becomes ``projects/<project>/global/networks/<name>``; paths pass through."""
    return network if "/" in network else "projects/%s/global/networks/%s" % (project, network)
