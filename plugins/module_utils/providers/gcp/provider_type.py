# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Registration of the ``gcp`` type; the provider (and with it the SDK) is imported lazily."""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.provider_type import ProviderType
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.config import GcpConfig


def _build(name, installation, block):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.provider import (
        GcpProvider,
    )

    return GcpProvider(name, installation, block)


TYPE = ProviderType(
    name="gcp",
    block=GcpConfig,
    factory=_build,
    summary="a Compute Engine VM (google-cloud-compute), Squid installed by cloud-init",
)
