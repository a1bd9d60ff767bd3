# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""How any value a user or a backend gave is quoted in a message: short and escaped.

A 5 MB name, an id with a newline or NUL, or an alias-expanded list must not turn an error
message into megabytes or forge extra log lines, so every message quotes a value through here.
Containers are never rendered (an alias bomb's repr alone would be gigabytes), only described.
"""

from __future__ import annotations

MAX_EXCERPT_CHARS = 60


def label(value) -> str:
    """A key or field name as written when it is a short printable name, else its excerpt."""
    if (
        isinstance(value, str)
        and 0 < len(value) <= MAX_EXCERPT_CHARS
        and value.isprintable()
        and " " not in value
    ):
        return value
    return excerpt(value)


def excerpt(value, limit: int = MAX_EXCERPT_CHARS) -> str:
    """``repr``-style quoting (control characters escaped), cut to ``limit`` characters."""
    if isinstance(value, str | bytes):
        text = repr(value[: limit + 1])
        if len(value) <= limit:
            return text
        return "%s...(%d chars)" % (text[:limit], len(value))
    if isinstance(value, bool | int | float) or value is None:
        return repr(value)[:limit]
    if isinstance(value, dict | list | tuple | set):
        return "<%s of %d>" % (type(value).__name__, len(value))
    return "<%s>" % type(value).__name__
