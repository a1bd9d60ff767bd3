# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Host variables that export as plain strings yet are never templated.

On ansible-core 2.19+ a string an inventory plugin sets is untrusted by default, and
``ansible-inventory --list --export`` (what an AWX inventory update runs) writes every untrusted
string as ``{"__ansible_unsafe": ...}``, ``ansible_host`` included. A string with no template
syntax templates to itself, so trusting it changes nothing but its export: such strings are
marked trusted (``ansible.template.trust_as_template``, public API); a string that looks like a
template (``Templar.is_possibly_template``) stays untrusted, so it is never rendered and is still
exported wrapped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def exportable(value: Any, looks_like_template: Callable[[str], bool]) -> Any:
    """``value`` with every string that cannot be a template trusted (dicts and lists walked)."""
    from ansible.template import trust_as_template

    if isinstance(value, str):
        return value if looks_like_template(value) else trust_as_template(value)
    if isinstance(value, dict):
        return {k: exportable(v, looks_like_template) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [exportable(v, looks_like_template) for v in value]
    return value
