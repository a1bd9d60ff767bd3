"""A namespace-scoped controller never collects another namespace's instances, and liveness
follows the reconcile loop (issue 14, "Also")."""

from __future__ import annotations

import threading

from egress_proxies_controller.manager import Manager
from egress_proxies_controller.orphan_gc import OrphanGC


class Informer:
    def __init__(self):
        self.synced = threading.Event()
        self.synced.set()

    def uids(self):
        return ["uid-1"]


class Executor:
    def __init__(self):
        self.sweeps = 0

    def gc(self, live, min_age, dry_run):
        self.sweeps += 1
        return {}


def gc(**kw) -> tuple:
    executor = Executor()
    loop = OrphanGC(executor, Informer(), None, interval=1, jitter=0, min_age=600, dry_run=False, **kw)
    loop.round()
    return loop, executor


def test_a_namespace_scoped_controller_does_not_sweep_a_shared_installation():
    _loop, executor = gc(namespace="team-a")
    assert executor.sweeps == 0


def test_it_sweeps_when_the_installation_is_its_own_or_it_sees_every_namespace():
    assert gc(namespace="team-a", own_installation=True)[1].sweeps == 1
    assert gc()[1].sweeps == 1


def test_liveness_fails_when_the_loop_stops_going_round():
    import time

    m = Manager.__new__(Manager)
    m.last_progress = 0.0  # the loop last went round at boot and never again
    assert not m.healthy(within=60)
    m.last_progress = time.monotonic()
    assert m.healthy(within=60)
