# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The registry of provider types: the one place a new type is added.

The config's type allow-list is derived from here (never written twice). Provider packages
are imported statically so Ansible bundles them with the modules; each keeps its SDK behind a
guarded import, so a missing SDK only fails the providers of that type, with a clear message.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import rate_limit
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import (
    provider_type as gcp_type,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import (
    provider_type as kubernetes_type,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    provider_type as libvirt_types,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import (
    provider_type as local_type,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe

_TYPES = {t.name: t for t in (local_type.TYPE, kubernetes_type.TYPE, gcp_type.TYPE, *libvirt_types.TYPES)}


def type_names() -> tuple:
    return tuple(sorted(_TYPES))


def lookup(type_name: str):
    return _TYPES.get(type_name)


def build(spec, installation: str, telemetry=None):
    """Construct the provider for one parsed ``ProviderSpec`` and wrap it for observation (and
    its rate limit, when the spec has one)."""
    provider_type = _TYPES[spec.type]
    inner = provider_type.factory(spec.name, installation, spec.block)
    limit = getattr(spec, "rate_limit", None)
    bucket = rate_limit.SharedTokenBucket(limit, installation, spec.name) if limit is not None else None
    return observe.observed(inner, telemetry, bucket)
