# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Which strings the inventory plugin lets ansible-core evaluate as templates: its own
``hostnames`` entries, never a value a provider returned; and how those values export.

Why: an instance's name or label is whatever a backend answered; written into host variables
or rendered into a host name, it must come out literally, whatever ``{{ }}`` it holds. The two
ansible-core worlds say so differently. From 2.19 (data tagging) a string is a template only when
tagged ``trust_as_template``, and data an inventory plugin sets is untrusted already. Before 2.19
every string is a template unless wrapped as unsafe (``wrap_var``). The world is chosen by
feature detection: ``trust_as_template`` importable or not.

In both worlds ``ansible-inventory --list --export`` (what an AWX inventory update runs) writes a
value kept from templating as ``{"__ansible_unsafe": ...}``. A string with no template syntax
templates to itself, so only the strings that could be templates (``looks_like_template``, the
templar's ``is_possibly_template``) are kept from templating: every other string (``ansible_host``
included) exports as a plain string, and nothing a backend said is ever rendered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:  # ansible-core 2.19 and later
    from ansible.template import trust_as_template
except ImportError:  # 2.16 to 2.18: every string is a template unless it is wrapped as unsafe
    trust_as_template = None
    from ansible.utils.unsafe_proxy import wrap_var
else:
    wrap_var = None

DATA_TAGGING = trust_as_template is not None


def template(text: str) -> str:
    """A template string from this plugin's own configuration, evaluated by the templar."""
    return trust_as_template(text) if DATA_TAGGING else text


def literal(value: Any, looks_like_template: Callable[[str], bool]) -> Any:
    """A value from a backend (containers walked), never evaluated as a template: a string that
    could be one is kept untrusted (2.19+) or wrapped unsafe (2.16-2.18); any other string is
    marked trusted (2.19+) or left plain, so it exports as itself."""
    if isinstance(value, str):
        if looks_like_template(value):
            return value if DATA_TAGGING else wrap_var(value)
        return trust_as_template(value) if DATA_TAGGING else value
    if isinstance(value, dict):
        return {k: literal(v, looks_like_template) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [literal(v, looks_like_template) for v in value]
    return value
