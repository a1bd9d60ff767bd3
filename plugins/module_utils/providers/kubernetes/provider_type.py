# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Registration of the ``kubernetes`` type; the factory imports the provider (and so the
kubernetes client) only when a provider of this type is built."""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.provider_type import ProviderType
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.config import (
    KubernetesConfig,
)


def _build(name, installation, block):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.provider import (
        KubernetesProvider,
    )

    return KubernetesProvider(name, installation, block)


TYPE = ProviderType(
    name="kubernetes",
    block=KubernetesConfig,
    factory=_build,
    summary="a Squid Pod (and its squid.conf ConfigMap) in a Kubernetes cluster",
)
