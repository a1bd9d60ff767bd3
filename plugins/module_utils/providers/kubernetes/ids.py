# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The kubernetes provider id: ``<namespace>/<name>``, self-contained and parsed strictly.

Used by ``provider.py`` for every id it hands out or receives. Both parts must be DNS labels
(a Pod name from ``name_from_uid`` always is), so an id with an empty part, extra slashes or
whitespace is refused instead of being half-understood.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names


def format_id(namespace: str, name: str) -> str:
    return "%s/%s" % (namespace, name)


def parse_id(provider_id) -> tuple:
    """``"ns/name"`` -> ``("ns", "name")``; ``ValueError`` for anything else."""
    if not isinstance(provider_id, str):
        raise ValueError("malformed kubernetes provider id %r: want <namespace>/<name>" % (provider_id,))
    parts = provider_id.split("/")
    if len(parts) != 2:
        raise ValueError("malformed kubernetes provider id %r: want <namespace>/<name>" % (provider_id,))
    namespace, name = parts
    if not names.is_dns_label(namespace):
        raise ValueError(
            "malformed kubernetes provider id %r: the namespace must be a DNS label" % (provider_id,)
        )
    if not names.is_dns_label(name):
        raise ValueError("malformed kubernetes provider id %r: the name must be a DNS label" % (provider_id,))
    return namespace, name
