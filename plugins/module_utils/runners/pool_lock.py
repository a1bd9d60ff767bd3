# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The lock a ``proxy_pool`` run holds on each of its providers' backend state (issue 28 §3).

Two runs on one pool (two admins, an AWX schedule beside a manual run) that both list before
either creates both plan from the same view: each makes the whole pool, ``count`` is overshot and
one name can land on two providers. So a run holds, for everything from its first list to its
last delete, an exclusive lock per backend that has one (``Provider.pool_lock_path``: the local
provider's is ``<stateDir>/locks/.pool-<pool>``); the second run waits for the first, up to
``timeout``, then plans from what the first left, or fails naming the lock and its holder having
changed nothing. Locks are taken in path order (two runs with spreads in opposite orders never
deadlock) and once per path (two providers on one stateDir share it). Check mode changes nothing,
so it takes none. A spread with no such lock (gcp, kubernetes, libvirt) is not serialised: each
run lists the pool again at its end and trims it to ``count`` instead (``pools._settle``).
"""

from __future__ import annotations

import contextlib
import os

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import file_lock


def paths(pm, spec) -> list:
    """``(path, provider)`` of every lock the run takes, in the order it takes them."""
    found = {}
    for target in spec.targets:
        path = pm.provider(target.provider).pool_lock_path(spec.pool)
        if path:
            found.setdefault(path, target.provider)
    return sorted(found.items())


@contextlib.contextmanager
def held(pm, spec, deadline):
    """Hold every lock of the pool's providers; Transient naming the lock when one is held past
    ``deadline`` by another run."""
    if pm.check_mode:
        yield
        return
    with contextlib.ExitStack() as stack:
        for path, provider in paths(pm, spec):
            try:
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                stack.enter_context(file_lock.hold(path, deadline, "pool %s" % spec.pool))
            except DeadlineExceeded as exc:
                raise errors.transient(
                    "lock", provider, "", "another run of pool %s holds its lock: %s" % (spec.pool, exc)
                ) from None
            except OSError as exc:
                raise errors.transient("lock", provider, "", "pool %s: %s" % (spec.pool, exc)) from None
        yield
