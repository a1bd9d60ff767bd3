# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Which strings the inventory plugin lets ansible-core evaluate as templates: its own
``hostnames`` entries, never a value a provider returned.

Why: an instance's name or label is whatever a backend answered; written into host variables
or rendered into a host name, it must come out literally, whatever ``{{ }}`` it holds. The two
ansible-core worlds say so differently. From 2.19 (data tagging) a string is a template only when
tagged ``trust_as_template``, and data an inventory plugin sets is untrusted already. Before 2.19
every string is a template unless wrapped as unsafe (``wrap_var``). The world is chosen by
feature detection: ``trust_as_template`` importable or not.
"""

from __future__ import annotations

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


def literal(value):
    """A value from a backend (nested containers included), never evaluated as a template."""
    return value if DATA_TAGGING else wrap_var(value)
