# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Registration of the types ``kvm`` and ``kvm2``: one implementation, two type names.

Both take the same block (``kvm:`` or ``kvm2:``); the type name selects the metadata namespace
and the volume names, so a ``kvm`` provider never adopts, lists or deletes ``kvm2``'s domains
(nor the other way round), even on a shared host and pool. The factory imports the provider
lazily: building the registry never needs libvirt-python.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.provider_type import ProviderType
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.config import (
    LibvirtConfig,
)


def _factory(type_name: str):
    def build(name, installation, block):
        from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.provider import (
            LibvirtProvider,
        )

        return LibvirtProvider(type_name, name, installation, block)

    return build


KVM = ProviderType(
    name="kvm",
    block=LibvirtConfig,
    factory=_factory("kvm"),
    summary="a libvirt domain on a hypervisor reached over SSH",
)
KVM2 = ProviderType(
    name="kvm2",
    block=LibvirtConfig,
    factory=_factory("kvm2"),
    summary="a libvirt domain on a hypervisor reached over SSH (separate namespace from kvm)",
)
TYPES = (KVM, KVM2)
