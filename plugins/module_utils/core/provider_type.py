# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""How a provider package declares itself to the registry: a type name, the schema of its
config block and a constructor. Constructors only read config; they never dial the backend,
so one unreachable API or hypervisor cannot take the other providers down with it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class ProviderType:
    name: str
    block: type
    factory: Callable  # (name, installation, block) -> contract.Provider
    summary: str = ""
