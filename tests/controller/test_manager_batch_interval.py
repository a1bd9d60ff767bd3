"""``--min-batch-interval`` (issue 18): due work that arrives while the last batch is younger
than the interval gathers into one batch instead of one run each; the first batch after an idle
spell starts at once. Runs the real ProxyController loop over the in-memory API of fake_cluster.py."""

from __future__ import annotations

import threading
import time

from egress_proxies_controller.proxy.controller import ProxyController

from .fake_cluster import FakeExecutor, FakeKube, proxy_object
from .test_manager_snapshots import manager, running


def run_loop(m: ProxyController):
    thread = threading.Thread(target=m.run, daemon=True)
    thread.start()
    return thread


def wait_for(predicate, seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met")


def batches_of(executor) -> list:
    return [sorted(call) for call in executor.calls if any(a.op == "create" for a in call.values())]


def test_work_due_within_the_interval_gathers_into_one_batch(providers_file):
    kube = FakeKube()
    executor = FakeExecutor(running)
    m = manager(kube, executor, providers_file)
    m.tick, m.batcher.min_batch_interval = 0.02, 3.0
    kube.put(proxy_object(name="p1", uid="u1"))
    m.queue.add("ns/p1")
    thread = run_loop(m)
    try:
        wait_for(lambda: len(batches_of(executor)) == 1)  # the first batch after idle: at once
        for i in (2, 3, 4):
            kube.put(proxy_object(name="p%d" % i, uid="u%d" % i))
            m.queue.add("ns/p%d" % i)
            time.sleep(0.2)
        wait_for(lambda: len(batches_of(executor)) == 2)
        assert batches_of(executor) == [["ns/p1"], ["ns/p2", "ns/p3", "ns/p4"]]
    finally:
        m.stop.set()
        thread.join(10)


def test_without_an_interval_each_arrival_may_start_its_own_batch(providers_file):
    kube = FakeKube()
    executor = FakeExecutor(running)
    m = manager(kube, executor, providers_file)
    m.tick = 0.02
    thread = run_loop(m)
    try:
        for i in (1, 2, 3):
            kube.put(proxy_object(name="p%d" % i, uid="u%d" % i))
            m.queue.add("ns/p%d" % i)
            wait_for(lambda n=i: len(batches_of(executor)) == n)
        assert batches_of(executor) == [["ns/p1"], ["ns/p2"], ["ns/p3"]]
    finally:
        m.stop.set()
        thread.join(10)


def test_a_new_providers_file_plans_again_only_the_proxies_of_providers_it_changed(providers_file):
    """A providers-file change used to put every cached Proxy back in the queue (10,000 polls
    for one new provider's entry); now only those of a provider added, removed or changed."""
    kube = FakeKube()
    for name, provider in (("a1", "local"), ("a2", "local"), ("b1", "other"), ("c1", "third")):
        kube.put(proxy_object(name=name, uid="u-" + name, provider=provider))
    m = manager(kube, FakeExecutor(running), providers_file)
    while m.queue.pop_due(100, 0):  # empty the queue the first version filled
        pass
    with open(providers_file, "a", encoding="utf-8") as handle:
        handle.write("  - {name: other, type: local}\n")  # 'other' added: b1 was latched on it
    m.reload_config()
    assert sorted(m.queue.pop_due(100, 0)) == ["ns/b1"]
