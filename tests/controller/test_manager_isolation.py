"""One provider cannot stall the others (issue 14): each provider's calls run on their own.

A provider whose run hangs holds only its own Proxies: the healthy provider's Proxies are
answered and written while the stuck run is still going, are never marked Retrying, and keep
being served on later ticks; the stuck provider's keys wait for its slots instead of taking
anyone else's, and go together in the run its freed slot starts. Also: a failed run lets go
only of its own keys.
"""

from __future__ import annotations

import os
import threading

from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.reconciler import Answer, Settings

from .fake_cluster import FakeInformer, FakeKube, proxy_object
from .test_manager_snapshots import running


class SplitExecutor:
    """Blocks every call of provider ``slow`` until released; answers the others at once."""

    def __init__(self):
        self.release = threading.Event()
        self.slow_started = threading.Event()
        self.calls = []

    def execute(self, actions, create_fields, on_answer=None):
        self.calls.append(sorted(a.provider for a in actions.values()))
        if any(a.provider == "slow" for a in actions.values()):
            self.slow_started.set()
            self.release.wait(30)
            return {k: Answer(ok=False, error_class="transient", message="run timeout") for k in actions}
        return {k: running(k, a, None) for k, a in actions.items()}

    def abort_all(self):
        self.release.set()


def make(tmp_path, kube, executor) -> ProxyController:
    path = tmp_path / "providers.yaml"
    path.write_text("providers:\n  - {name: fast, type: local}\n  - {name: slow, type: local}\n")
    config = ProvidersConfig(str(path), os.path.join(tmp_path, "private"), lambda _p, _n: [])
    m = ProxyController(
        kube, FakeInformer(kube), WorkQueue(0.01, 0.02), executor, Settings(), config, runs_in_flight=1
    )
    m.reload_config()
    return m


def test_a_stuck_provider_holds_only_its_own_proxies(tmp_path):
    kube = FakeKube()
    kube.put(proxy_object(name="f1", uid="u-f1", provider="fast"))
    kube.put(proxy_object(name="s1", uid="u-s1", provider="slow"))
    executor = SplitExecutor()
    m = make(tmp_path, kube, executor)
    worker = threading.Thread(target=m.process, args=(m.queue.pop_due(10, 0),))
    worker.start()
    try:
        assert executor.slow_started.wait(10)
        done = threading.Event()

        def fast_written():
            status = kube.get("ns/f1").get("status") or {}
            return bool(status.get("providerID"))

        for _attempt in range(200):  # the fast Proxy is written while the slow run still hangs
            m.process(m.queue.pop_due(10, 0))  # its answer's event, reconciled
            if fast_written():
                done.set()
                break
            threading.Event().wait(0.05)
        assert done.is_set(), "the healthy provider waited for the stuck one"
        kube.put(proxy_object(name="s2", uid="u-s2", provider="slow"))
        m.queue.add("ns/f1")
        m.queue.add("ns/s2")
        m.process(m.queue.pop_due(10, 0))  # a later tick: the slow provider's slot is taken
        assert ["slow"] not in executor.calls[2:]  # s2 waits for slow's slot ...
        assert m.batcher.waiting("slow") == ["ns/s2"]  # ... waiting, not in a second run
        assert "ns/s2" in m.in_flight  # its reconciles decide nothing new meanwhile
    finally:
        executor.release.set()
        worker.join(10)
        assert m.drain(10)
    assert executor.calls.count(["slow"]) == 2  # the stuck run's slot went straight to s2
    assert not m.batcher.waiting("slow") and len(m.in_flight) == 0
    for _key, status in kube.status_writes:
        if _key == "ns/f1":
            ready = next(c for c in status["conditions"] if c["type"] == "Ready")
            assert ready["reason"] != "Retrying"
