# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The base every provider's config block is declared on, and the field checks they share.

Blocks are strict: camelCase keys only (as in the reference's providers file), unknown keys
rejected, no silent type coercion, immutable once parsed. Error locations are rendered as the
exact path a user edits, e.g. ``providers[2].kvm.hosts[0].name``.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.pydantic_compat import (
    BaseModel,
    ConfigDict,
    to_camel,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt, label

DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
_DNS_LABEL = re.compile(DNS_LABEL_PATTERN)


class BlockModel(BaseModel):
    """Strict, camelCase, frozen: the shape of every ``<type>:`` block."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=False,
        strict=True,
        frozen=True,
    )


def format_loc(loc) -> str:
    """``('providers', 2, 'kvm', 'name')`` -> ``providers[2].kvm.name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += "[%d]" % part
        else:
            out += ("." if out else "") + label(part)
    return out


def format_validation_error(exc, prefix=()) -> list:
    """One ``path: message`` line per pydantic error, with ``prefix`` prepended to each path."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = tuple(prefix) + tuple(err.get("loc", ()))
        message = err.get("msg", "invalid value")
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if err.get("type") == "extra_forbidden":
            message = "unknown field"
        lines.append("%s: %s" % (format_loc(loc) or "<root>", message))
    return lines


def check_dns_label(value: str, what: str = "value") -> str:
    if not _DNS_LABEL.fullmatch(value or ""):  # fullmatch: "$" alone accepts a trailing newline
        raise ValueError(
            "%s %s must be a DNS label: lowercase letters, digits and '-', 1-63 characters, "
            "starting and ending with a letter or digit" % (what, excerpt(value))
        )
    return value


def matching(pattern, message: str, optional: bool = False):
    """A field check: the whole value matches ``pattern`` (with ``optional``, or is empty);
    otherwise ``message``, in which ``{!r}`` stands for the value."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if (value or not optional) and not compiled.fullmatch(value):
            raise ValueError(message.format(value))
        return value

    return check


def one_of(choices: tuple, note: str = ""):
    """A field check: the value is one of ``choices`` (``note`` follows the list in the message)."""

    def check(value: str) -> str:
        if value not in choices:
            raise ValueError("must be one of %s%s" % (", ".join(choices), note))
        return value

    return check


def check_cidrs(values) -> list:
    """Every entry must be an IPv4 or IPv6 network in CIDR notation (host bits allowed)."""
    for value in values:
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise ValueError("%s is not a CIDR range such as 127.0.0.0/8" % excerpt(value)) from None
    return list(values)
