# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ``kubernetes:`` config block: image, resources, who may use the proxies, where they go
and how to reach the cluster.

Read by ``config/providers_file.py`` through the registry; validation names the exact field
(``providers[0].kubernetes.resources.limits.cpu: ...``) and never contacts the cluster.
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
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import connection

# A Squid image; the Pod runs it as the image's proxy user (uid 13) with a read-only root.
DEFAULT_IMAGE = "docker.io/ubuntu/squid:6.6-24.04_beta"
DEFAULT_RUN_AS_USER = 13
# Who may use a proxy unless told otherwise: the private ranges (RFC 1918), where Pod and node
# networks live. Never everyone.
DEFAULT_ALLOWED_SOURCE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
RESOURCE_NAMES = ("cpu", "memory", "ephemeral-storage")
# A Kubernetes quantity as users write it: 100m, 0.5, 64Mi, 1G, 1e3.
_QUANTITY = re.compile(
    r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
)


def _check_quantities(value: dict) -> dict:
    for key, quantity in value.items():
        if key not in RESOURCE_NAMES:
            raise ValueError("unknown resource %r (allowed: %s)" % (key, ", ".join(RESOURCE_NAMES)))
        if not _QUANTITY.match(quantity):
            raise ValueError("%s: %r is not a Kubernetes quantity such as 100m or 64Mi" % (key, quantity))
    return value


class ResourcesConfig(BlockModel):
    """Requests and limits of the Squid container (``cpu``, ``memory``, ``ephemeral-storage``)."""

    requests: dict[str, str] = Field(default_factory=lambda: {"cpu": "50m", "memory": "64Mi"})
    limits: dict[str, str] = Field(default_factory=lambda: {"cpu": "500m", "memory": "256Mi"})

    _quantities = field_validator("requests", "limits")(_check_quantities)


class KubernetesConfig(BlockModel):
    """Everything optional: the defaults give an in-cluster provider for private-range clients."""

    image: str = Field(default=DEFAULT_IMAGE, min_length=1)
    run_as_user: int = Field(default=DEFAULT_RUN_AS_USER, ge=1)
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)
    allowed_source_ranges: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ALLOWED_SOURCE_RANGES), min_length=1
    )
    namespace: str | None = None
    # How to reach the cluster (connection.py): kubernetes.core's options, camelCase.
    kubeconfig: str | None = None
    context: str | None = None
    host: str | None = None
    api_key: str | None = Field(default=None, repr=False)  # a bearer token: never shown
    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    validate_certs: bool | None = None
    proxy: str | None = None
    request_timeout_seconds: float = Field(default=30.0, gt=0, le=600)

    @field_validator("image")
    @classmethod
    def _image(cls, value: str) -> str:
        if any(c.isspace() for c in value):
            raise ValueError("an image reference has no whitespace")
        return value

    _cidrs = field_validator("allowed_source_ranges")(check_cidrs)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value):
        return None if value is None else check_dns_label(value, "namespace")

    @model_validator(mode="before")
    @classmethod
    def _connection_from_environment(cls, data):
        """A connection option the block leaves out comes from its ``K8S_AUTH_*`` variable."""
        return connection.from_environment(data)

    _absolute = field_validator("kubeconfig", "ca_cert", "client_cert", "client_key")(
        connection.check_absolute
    )
    _url = field_validator("host", "proxy")(connection.check_url)
    _api_key = field_validator("api_key")(connection.check_not_empty)

    @field_validator("context")
    @classmethod
    def _context(cls, value):
        if value is not None and not value:
            raise ValueError("must not be empty (leave it out for the kubeconfig's current context)")
        return value

    @model_validator(mode="after")
    def _client_pair(self):
        """A client certificate without its key (or the reverse) authenticates nobody."""
        if bool(self.client_cert) != bool(self.client_key):
            raise ValueError("clientCert and clientKey go together (one is set, the other is not)")
        return self
