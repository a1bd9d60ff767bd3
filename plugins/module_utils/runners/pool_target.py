# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""One spread target of a pool: where a share of its members runs and how large that share is.

The one definition for ``proxy_pool`` (``pool_params`` builds it from the module's options) and
for the controller's ProxyPool (``pool_model`` builds it from ``spec.spread``; it imports this
file, docs/architecture.md import rule 11), so ``pool_split.split`` reads both alike. Standard
library only.
"""

from __future__ import annotations

import dataclasses

DEFAULT_TARGET = "default"  # the one target of a pool without a spread (one provider)


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    provider: str
    placement: dict
    weight: int = 1
    maximum: int | None = None  # the spread entry's ``max``: at most this many members here
