"""A namespace-scoped controller never collects another namespace's instances, and liveness
follows the reconcile loop (issue 14, "Also")."""

from __future__ import annotations

import threading

from egress_proxies_controller.loops.orphan_gc import OrphanGC
from egress_proxies_controller.proxy.controller import ProxyController


class Informer:
    def __init__(self):
        self.synced = threading.Event()
        self.synced.set()

    def uids(self):
        return ["uid-1"]


class Executor:
    def __init__(self, providers_file: str | None = "providers.yaml"):
        self.sweeps = 0
        self.providers_file = providers_file  # None: not validated yet

    def gc(self, live, min_age, dry_run):
        self.sweeps += 1
        return {}


def gc(providers_file: str | None = "providers.yaml", **kw) -> tuple:
    executor = Executor(providers_file)
    loop = OrphanGC(executor, Informer(), None, interval=1, jitter=0, min_age=600, dry_run=False, **kw)
    loop.round()
    return loop, executor


def test_a_namespace_scoped_controller_does_not_sweep_a_shared_installation():
    _loop, executor = gc(namespace="team-a")
    assert executor.sweeps == 0


def test_it_sweeps_when_the_installation_is_its_own_or_it_sees_every_namespace():
    assert gc(namespace="team-a", own_installation=True)[1].sweeps == 1
    assert gc()[1].sweeps == 1


def test_the_gc_waits_for_a_validated_providers_file_instead_of_failing_a_run(caplog):
    """Its first round comes 5 s after start, often before the providers file is validated: it
    must skip quietly (an INFO line), not start a run that fails RunFailed at ERROR."""
    import logging

    with caplog.at_level(logging.INFO, logger="egress_proxies_controller"):
        loop, executor = gc(providers_file=None)
    assert executor.sweeps == 0 and loop.last_report is None
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    assert "no valid providers file yet" in caplog.records[0].getMessage()
    executor.providers_file = "providers.yaml"  # validated: the next round sweeps
    loop.round()
    assert executor.sweeps == 1


def test_liveness_fails_when_the_loop_stops_going_round():
    import time

    m = ProxyController.__new__(ProxyController)
    m.last_progress = 0.0  # the loop last went round at boot and never again
    assert not m.healthy(within=60)
    m.last_progress = time.monotonic()
    assert m.healthy(within=60)
