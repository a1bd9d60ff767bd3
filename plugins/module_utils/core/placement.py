# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Where an instance should run: the placement fields, named once.

``Placement`` is the providers' view (``contract`` re-exports it); ``FIELDS`` are the module
option ``placement``'s keys (``args_common``, ``instance_items``, ``pool_params``), and
``CRD_KEYS`` the same fields as the Proxy CRD's ``spec.placement`` spells them (camelCase),
which the controller reads and hands to the modules (its ``spec`` and ``manager``). Standard
library only: the controller imports it (docs/architecture.md, import rule 11).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where an instance should run; a provider may ignore fields that do not apply (and says so)."""

    region: str = ""
    zone: str = ""
    machine_type: str = ""
    image: str = ""


FIELDS = tuple(field.name for field in dataclasses.fields(Placement))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


CRD_KEYS = {field: _camel(field) for field in FIELDS}  # module field -> its spec.placement key
