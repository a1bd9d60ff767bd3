"""How ``make pytest`` spreads the main session over pytest-xdist workers: by file, except that
every file using the libvirt test hypervisors goes to one worker.

Why workers at all: on an idle 2-core machine the serial session kept the load average near 1;
most of its time is waiting (Provisioning polls, guest boots, Lease hand-overs, deadlines), so
two workers overlap those waits.

Why one group for libvirt: the libvirt test lock (``contract/machine_lock.py``) is held by the
first worker that starts a test hypervisor until its session ends (the real-guest network has a
fixed subnet, and a crashed session's clean-up is safe only when no other session runs), so a
libvirt file on a second worker would fail at once. pytest-xdist's ``xdist_group`` marks do not
group under pytest 9.2 (pytest-xdist issue 1386), hence this scheduler, which keeps
``--dist loadfile``'s rule and adds the one group.

The scheduler runs in the xdist controller, which sees node ids, not fixtures, so the group is
decided from each file's source (``LIBVIRT_MARKS``); every worker then checks that rule against
the fixtures its items really use (``check``), so a file that starts using a hypervisor without
matching the rule fails the collection with its name instead of failing later on the lock.
"""

from __future__ import annotations

import functools
import os
import re

LIBVIRT_GROUP = "libvirt test hypervisors"
# Words whose presence in a test file's source puts it in the libvirt group.
LIBVIRT_MARKS = re.compile(
    r"\b(libvirt_fixtures|libvirt_host|image_host|guest_network|guest_backend|system_libvirtd|LibvirtHost)\b"
)
# The fixtures (and the class) that take the machine-wide libvirt test lock.
LIBVIRT_FIXTURES = frozenset(
    {"libvirt_host", "image_host", "guest_network", "guest_backend", "system_libvirtd"}
)


@functools.cache
def uses_libvirt(path: str) -> bool:
    """Whether the test file at ``path`` (relative to the rootdir or absolute) is in the group."""
    try:
        with open(path, encoding="utf-8") as handle:
            return bool(LIBVIRT_MARKS.search(handle.read()))
    except OSError:
        return False


def scope_of(nodeid: str, rootdir: str) -> str:
    path = nodeid.split("::", 1)[0]
    return LIBVIRT_GROUP if uses_libvirt(os.path.join(rootdir, path)) else path


def really_uses_libvirt(item) -> bool:
    if LIBVIRT_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    from contract.libvirt_host import LibvirtHost

    module = getattr(item, "module", None)
    return module is not None and any(v is LibvirtHost for v in vars(module).values())


def check(items, rootdir: str) -> None:
    """Refuse a collection in which a file takes the libvirt lock but is not in the group."""
    wrong = sorted(
        {str(item.path) for item in items if really_uses_libvirt(item) and not uses_libvirt(str(item.path))}
    )
    if wrong:
        import pytest

        raise pytest.UsageError(
            "these test files use the libvirt test hypervisors but tests/xdist_groups.py would "
            "not keep them on one worker (add the fixture to LIBVIRT_MARKS): %s" % ", ".join(wrong)
        )


def make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    rootdir = str(config.rootpath)

    class ResourceScheduling(LoadScopeScheduling):
        """``--dist loadfile`` with the libvirt files as one unit."""

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid, rootdir)

    return ResourceScheduling(config, log)
