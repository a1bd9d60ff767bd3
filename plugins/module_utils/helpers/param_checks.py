# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Checks of module parameters that core Ansible's argument spec cannot express.

Ansible converts a dict given for a ``str`` option into its repr, ``true`` into the ``int`` 1
and accepts ``nan`` for a ``float``; each would then fail later as ``transient`` ("safe to
retry", but it never succeeds) or do something nobody asked for. These checks run on the raw
values before anything is touched and answer one ``field: problem`` line each.
"""

from __future__ import annotations

import decimal
import math

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt

MAX_SECONDS = 86400.0
MAX_CONCURRENCY = 256
MAX_TEXT_CHARS = 253
# No int option of the collection means anything past 64 bits; Decimal tells the magnitude of
# "1e999999999" without building the integer.
MAX_INT_DIGITS = 19


def seconds(value, field: str) -> str:
    """A finite duration above 0 and at most a day, or the problem with it."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return "%s: %s is not a number of seconds" % (field, excerpt(value))
    try:
        number = float(value)
    except ValueError:
        return "%s: %s is not a number of seconds" % (field, excerpt(value))
    if not math.isfinite(number) or number <= 0 or number > MAX_SECONDS:
        return "%s: %s must be more than 0 and at most %d seconds" % (field, excerpt(value), MAX_SECONDS)
    return ""


def count(value, field: str, maximum: int = MAX_CONCURRENCY) -> str:
    """A whole number from 1 to ``maximum``, or the problem with it."""
    return whole(value, field, 1, maximum)


def whole(value, field: str, minimum: int, maximum: int) -> str:
    """A whole number from ``minimum`` to ``maximum`` (not ``true``, not ``2.5``), or the problem."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value)
    if number is None or not minimum <= number <= maximum:
        return "%s: %s must be a whole number from %d to %d" % (field, excerpt(value), minimum, maximum)
    return ""


def int_problem(value, field: str) -> str:
    """Why core Ansible's int conversion of an option (``int(Decimal(value))``) would crash on
    ``value`` (``OverflowError`` on an infinity) or take forever (``1e999999999``); ``""``
    otherwise, also for what core refuses cleanly itself."""
    if not isinstance(value, str | float):
        return ""
    try:
        number = decimal.Decimal(value.strip() if isinstance(value, str) else value)
    except (decimal.DecimalException, ValueError):
        return ""  # core refuses it with its own TypeError message
    if number.is_infinite():
        return "%s: must be a whole number, not infinity" % field
    if number.is_finite() and number.adjusted() >= MAX_INT_DIGITS:
        return "%s: must be a whole number of at most %d digits" % (field, MAX_INT_DIGITS)
    return ""


def port(value, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return "%s: %s is not a port (1-65535)" % (field, excerpt(value))
    try:
        number = int(value)
    except ValueError:
        return "%s: %s is not a port (1-65535)" % (field, excerpt(value))
    if not 1 <= number <= 65535:
        return "%s: %s is not a port (1-65535)" % (field, excerpt(value))
    return ""


def text(value, field: str, limit: int = MAX_TEXT_CHARS) -> str:
    """A string (not a dict or list Ansible turned into one) of printable characters."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return "%s: must be a string, not %s" % (field, excerpt(value))
    if len(value) > limit:
        return "%s: %s is longer than %d characters" % (field, excerpt(value), limit)
    if value != value.strip():
        return "%s: %s has leading or trailing whitespace" % (field, excerpt(value))
    if any(not ch.isprintable() for ch in value):
        return "%s: %s contains control characters" % (field, excerpt(value))
    return ""
