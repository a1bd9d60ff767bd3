"""Registration of the ``local`` type."""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.provider_type import ProviderType
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.config import LocalConfig


def _build(name, installation, block):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.provider import (
        LocalProvider,
    )

    return LocalProvider(name, installation, block)


TYPE = ProviderType(
    name="local",
    block=LocalConfig,
    factory=_build,
    summary="a Squid process on this host, on its own loopback address",
)
