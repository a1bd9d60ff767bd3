"""Due work gathers into few runs (issue 18): keys waiting for a busy provider go in one run,
and Running polls come due in rounds, so one run (one list) answers a provider's whole round.

Measured before this: 1000 Proxies on kwok, 3 run slots, and runs carrying 1-11 items each
(a key that found its provider busy went back to the queue and came out again in whichever tiny
batch next caught a free slot), every one paying a whole ansible start-up.
"""

from __future__ import annotations

import os
import threading

from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.proxy import poll_rounds
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.reconciler import Settings
from egress_proxies_controller.proxy.spec import ProxySpec

from .fake_cluster import FakeInformer, FakeKube, proxy_object, settle
from .test_manager_snapshots import running


class BlockingExecutor:
    """The first run blocks until released; every run's keys are recorded."""

    def __init__(self):
        self.release = threading.Event()
        self.started = threading.Event()
        self.calls = []

    def execute(self, actions, create_fields, on_answer=None):
        self.calls.append(sorted(actions))
        if len(self.calls) == 1:
            self.started.set()
            self.release.wait(30)
        return {k: running(k, a, None) for k, a in actions.items()}

    def abort_all(self):
        self.release.set()


def make(tmp_path, kube, executor, **kwargs) -> ProxyController:
    path = tmp_path / "providers.yaml"
    path.write_text("providers:\n  - {name: local, type: local}\n")
    config = ProvidersConfig(str(path), os.path.join(tmp_path, "private"), lambda _p, _n: [])
    settings = Settings(running_poll=60.0)
    m = ProxyController(kube, FakeInformer(kube), WorkQueue(0.01, 0.02), executor, settings, config, **kwargs)
    m.reload_config()
    return m


def busy(tmp_path, **kwargs) -> tuple:
    """A manager whose provider has one run in flight, blocked until ``executor.release``."""
    kube = FakeKube()
    kube.put(proxy_object(name="first", uid="u-0"))
    executor = BlockingExecutor()
    m = make(tmp_path, kube, executor, **kwargs)
    m.process(m.queue.pop_due(10, 0))
    assert executor.started.wait(10)
    return kube, executor, m


def arrive(kube, m, name: str) -> None:
    """A new Proxy whose key comes due and is taken by a tick of its own."""
    kube.put(proxy_object(name=name, uid="u-" + name))
    m.queue.add("ns/" + name)
    m.process(m.queue.pop_due(10, 0))


def test_keys_that_find_the_provider_busy_go_together_in_the_run_its_freed_slot_starts(tmp_path):
    kube, executor, m = busy(tmp_path, runs_in_flight=1)
    for i in range(1, 6):  # five keys arriving one tick apart, while the only slot is taken
        arrive(kube, m, "p%d" % i)
    assert executor.calls == [["ns/first"]]  # nothing started beside the busy run
    executor.release.set()
    settle(m)
    assert executor.calls[1] == ["ns/p%d" % i for i in range(1, 6)]  # one run, no queue round trip
    assert all(kube.get("ns/p%d" % i)["status"]["providerID"] for i in range(1, 6))
    assert not m.busy()


def running_proxy(name: str) -> dict:
    made = proxy_object(name=name, uid="u-" + name)
    made["status"] = {"providerID": "local/proxy-" + name, "provider": "local", "state": "Running"}
    made["status"].update(observedGeneration=1, specHash=ProxySpec.from_object(made).hash())
    return made


def busy_then_due(tmp_path, polls: int, creates: int, **kwargs):
    """A manager with one slot, taken by a blocked run, and polls and creates due meanwhile."""
    kube, executor, m = busy(tmp_path, runs_in_flight=1, **kwargs)
    for i in range(polls):
        kube.put(running_proxy("r%d" % i))
        m.queue.add("ns/r%d" % i)
    for i in range(creates):
        kube.put(proxy_object(name="c%d" % i, uid="u-c%d" % i))
        m.queue.add("ns/c%d" % i)
    m.process(m.queue.pop_due(100, 0))
    executor.release.set()
    settle(m)
    return kube, executor, m


def test_a_waiting_run_carries_the_polls_and_at_most_batch_max_creates(tmp_path):
    kube, executor, _m = busy_then_due(tmp_path, polls=4, creates=5, batch_max=3)
    second, third = executor.calls[1], executor.calls[2]
    assert [k for k in second if "/r" in k] == ["ns/r%d" % i for i in range(4)]
    assert len([k for k in second if "/c" in k]) == 3  # batch_max creates, then ...
    assert len([k for k in third if "/c" in k]) == 2  # ... the rest in the run after
    assert all(kube.get("ns/c%d" % i)["status"]["providerID"] for i in range(5))


def test_polls_beyond_poll_batch_max_go_in_the_next_run(tmp_path):
    _kube, executor, m = busy_then_due(tmp_path, polls=5, creates=0, poll_batch_max=2)
    assert [len(call) for call in executor.calls[1:]] == [2, 2, 1]
    assert not m.busy()


def test_running_proxies_answered_at_different_times_come_due_in_the_same_round(tmp_path):
    kube = FakeKube()
    executor = BlockingExecutor()
    executor.release.set()
    m = make(tmp_path, kube, executor)
    due = {}
    for i in range(3):  # created (and found Running) one after another
        kube.put(proxy_object(name="p%d" % i, uid="u-%d" % i))
        m.queue.add("ns/p%d" % i)
        settle(m)
        m.queue.add("ns/p%d" % i)  # the first poll
        settle(m)
        assert kube.get("ns/p%d" % i)["status"]["state"] == "Running"
        due["ns/p%d" % i] = m.queue._due["ns/p%d" % i]
        threading.Event().wait(0.3)
    assert max(due.values()) - min(due.values()) < 0.05  # one round, not three
    left = min(due.values()) - m.queue._clock()
    assert 30.0 - 1.0 <= left <= 90.0  # between half and one and a half intervals away


def test_poll_rounds_lie_on_the_providers_grid_between_half_and_one_and_a_half_intervals():
    for now in (0.0, 1000.0, 1234.5, 1e9 + 0.25):
        for provider in ("local", "k8s", "gcp-eu"):
            wait = poll_rounds.delay(provider, 60.0, now)
            assert 30.0 <= wait < 90.0
            assert (
                abs((now + wait - poll_rounds.offset(provider, 60.0)) % 60.0) < 1e-6
                or abs((now + wait - poll_rounds.offset(provider, 60.0)) % 60.0 - 60.0) < 1e-6
            )
    assert poll_rounds.offset("local", 60.0) != poll_rounds.offset("k8s", 60.0)  # spread out
    assert poll_rounds.delay("local", 0.0, 5.0) == 0.0


def test_without_rounds_each_proxy_is_polled_one_interval_after_its_answer(tmp_path):
    kube = FakeKube()
    executor = BlockingExecutor()
    executor.release.set()
    m = make(tmp_path, kube, executor, poll_in_rounds=False)
    kube.put(proxy_object(name="p0", uid="u-0"))
    for _step in range(2):  # the create, then the first poll
        m.queue.add("ns/p0")
        settle(m)
    left = m.queue._due["ns/p0"] - m.queue._clock()
    assert 59.0 <= left <= 60.0


def test_new_work_of_a_busy_provider_waits_for_the_handover_even_with_slots_free(tmp_path):
    kube, executor, m = busy(tmp_path, runs_in_flight=3, gather_while_busy=30.0)
    for i in range(3):  # three arrivals, two slots free: none starts a run of its own
        arrive(kube, m, "p%d" % i)
    threading.Event().wait(0.3)  # the batcher looks again: not waited long enough yet
    assert executor.calls == [["ns/first"]]
    executor.release.set()
    assert m.drain(10)
    assert executor.calls[1:] == [["ns/p0", "ns/p1", "ns/p2"]]


def test_work_that_waited_long_enough_takes_a_free_slot_while_the_busy_run_goes_on(tmp_path):
    kube, executor, m = busy(tmp_path, runs_in_flight=3, gather_while_busy=0.2)
    arrive(kube, m, "late")
    assert executor.calls == [["ns/first"]]
    for _attempt in range(100):  # the flushed run is answered while the first one still hangs
        m.process(m.queue.pop_due(10, 0))  # its answer's event, reconciled
        if (kube.get("ns/late").get("status") or {}).get("providerID"):
            break
        threading.Event().wait(0.05)
    assert (kube.get("ns/late").get("status") or {}).get("providerID")
    assert not executor.release.is_set()
    executor.release.set()
    assert m.drain(10)


def test_with_no_gathering_new_work_starts_on_a_free_slot_at_once(tmp_path):
    kube, executor, m = busy(tmp_path, runs_in_flight=3, gather_while_busy=0)
    arrive(kube, m, "now")
    assert m.drain(0.5) is False  # the first still hangs ...
    assert ["ns/now"] in executor.calls  # ... and the new one ran beside it
    executor.release.set()
    assert m.drain(10)
