# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ansible-core versions this collection supports, and the one message for any other.

Why here: the action plugins, the inventory plugin and the modules each check the version they
run under before anything version-specific is touched, so an unsupported ansible-core gets this
collection's own message (the range and the version found) instead of an "Unexpected Exception"
from an import. Pure: callers pass the version string they read (``ansible.release`` on the
controller, ``ansible.module_utils.ansible_release`` in a module). Keep ``MINIMUM`` in step with
``requires_ansible`` in meta/runtime.yml (tests/unit/test_core_range.py checks it).
"""

from __future__ import annotations

import re

MINIMUM: tuple[int, int] = (2, 16)
SUPPORTED = "ansible-core %d.%d or later" % MINIMUM


def minor(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version string such as ``2.19.14`` or ``2.21.0rc1``; None if unreadable."""
    found = re.match(r"\s*(\d+)\.(\d+)", str(version))
    return (int(found.group(1)), int(found.group(2))) if found else None


def problem(version: str) -> str | None:
    """The message for an unsupported ``version``, or None when this collection supports it."""
    found = minor(version)
    if found is not None and found >= MINIMUM:
        return None
    return "crawl.egress_proxies supports %s; this is ansible-core %s" % (SUPPORTED, version)
