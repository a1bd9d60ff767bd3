# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The one reader of the RFC 3339 times backends write (``creationTimestamp``, ``createdAt``).

Every provider reads an instance's creation time with it, so they agree on the rule GC relies
on: a time that cannot be read is ``None``, which GC treats as very old (it never shields an
orphan); a time without a zone is UTC.
"""

from __future__ import annotations

import datetime


def parse(value) -> datetime.datetime | None:
    """``2026-12-01T23:51:01Z`` (or with an offset) as an aware datetime, else ``None``."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)
