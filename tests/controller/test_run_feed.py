"""A run takes more creates and deletes while it works (issue 38: the Proxy loop as a stream).

A burst's calls reach the batcher over seconds, as each key's finalizer is written. Before this,
a run took only what waited when it started: the rest waited for the provider's next run (up to
``gather_while_busy``, or until ``batch_max`` had gathered) and its ansible start-up. Here the
executor is a fake whose runs read their feed through the real pipe (runs/item_feed.py), as the
module does, and answer each item as its line arrives.
"""

from __future__ import annotations

import json
import threading
import time

from egress_proxies_controller.runs.item_feed import ItemFeed

from .fake_cluster import FakeKube, proxy_object, settle
from .test_manager_gathering import make, running_proxy
from .test_manager_snapshots import running


class FeedingExecutor:
    """Runs that read their feed until end of file, answering each item as it comes; the first
    run holds its listed items until ``release``. Records each run's listed and fed keys."""

    def __init__(self, window: float = 60.0):
        self.window = window
        self.release = threading.Event()
        self.started = threading.Event()
        self.runs = []  # [(listed keys, fed keys)]
        self.feeds = []

    def feed_window(self) -> float:
        return self.window

    def new_feed(self) -> ItemFeed:
        feed = ItemFeed()
        self.feeds.append(feed)
        return feed

    def execute(self, actions, create_fields, on_answer=None, feed=None):
        run = (sorted(actions), [])
        self.runs.append(run)
        first = len(self.runs) == 1
        answers = {}
        if feed is not None:
            feed.start(list(actions))
            reader = threading.Thread(target=self._read, args=(feed, on_answer, run, answers), daemon=True)
            reader.start()
        if first:
            self.started.set()
            self.release.wait(30)
        for key, action in actions.items():
            answers[key] = running(key, action, None)
            if on_answer is not None:  # the module streams its listed items' results too
                on_answer(key, answers[key])
        if feed is not None:
            reader.join(30)
            assert not reader.is_alive(), "the feed was never closed"
            feed.release()
        return answers

    def _read(self, feed, on_answer, run, answers) -> None:
        with open(feed.path, encoding="utf-8") as lines:
            for index, line in enumerate(lines, start=len(run[0])):
                item = json.loads(line)
                key = feed.keys[index]
                assert item["name"] == feed.fed[key].name  # the line is the key's own item
                run[1].append(key)
                answers[key] = running(key, feed.fed[key], None)
                on_answer(key, answers[key])

    def abort_all(self):
        self.release.set()


def burst(tmp_path, count: int, executor=None, **kwargs):
    kube = FakeKube()
    kube.put(proxy_object(name="first", uid="u-first"))
    executor = executor or FeedingExecutor()
    m = make(tmp_path, kube, executor, **{"gather_while_busy": 30.0, **kwargs})
    m.process(m.queue.pop_due(10, 0))
    assert executor.started.wait(10)
    for i in range(count):
        kube.put(proxy_object(name="p%d" % i, uid="u-p%d" % i))
        m.queue.add("ns/p%d" % i)
    return kube, executor, m


def wait_for(predicate, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, "not within %.0fs" % seconds
        time.sleep(0.01)


def test_creates_that_come_while_a_run_works_are_fed_to_it_and_ready_before_it_ends(tmp_path):
    kube, executor, m = burst(tmp_path, 5)
    m.process(m.queue.pop_due(10, 0))
    # Answered through the running run while its own item still works (the first run is held).
    wait_for(lambda: len(executor.runs[0][1]) == 5 and len(m.answers) + len(m.queue) >= 5)
    assert len(executor.runs) == 1  # no second run, and no wait for the busy provider's slot
    assert executor.runs[0][1] == ["ns/p%d" % i for i in range(5)]
    keys = m.queue.pop_due(10, 0)
    m.process(keys)  # their answers applied while the run still holds its listed item
    assert all(kube.get("ns/p%d" % i)["status"]["state"] == "Running" for i in range(5))
    assert not kube.get("ns/first")["status"].get("providerID")  # still working
    executor.release.set()
    settle(m)
    assert kube.get("ns/first")["status"]["providerID"]
    assert len(executor.runs) == 1


def test_a_full_feed_closes_and_the_next_creates_start_a_run_at_once(tmp_path):
    kube, executor, m = burst(tmp_path, 5, batch_max=3)
    m.process(m.queue.pop_due(10, 0))
    # The first run holds 1 listed + 2 fed (batch_max 3); the other 3 start a run of their own at
    # once, although the provider is busy and gather_while_busy is 30 s.
    wait_for(lambda: len(executor.runs) >= 2)
    assert executor.runs[0][1] == ["ns/p0", "ns/p1"]
    wait_for(lambda: len(executor.runs[1][0]) + len(executor.runs[1][1]) == 3)
    assert executor.runs[1][0] + executor.runs[1][1] == ["ns/p2", "ns/p3", "ns/p4"]
    assert not executor.feeds[0].open  # full: closed, the module's end of file
    executor.release.set()
    settle(m)
    assert all(kube.get("ns/p%d" % i)["status"]["providerID"] for i in range(5))


def test_a_feed_closes_once_quiet_with_every_item_answered(tmp_path):
    kube, executor, m = burst(tmp_path, 2)
    executor.release.set()  # the listed item answers at once: only the feed keeps the run open
    m.process(m.queue.pop_due(10, 0))
    settle(m)  # returns only when the run ended: its feed closed by itself
    assert len(executor.runs) == 1 and executor.runs[0][1] == ["ns/p0", "ns/p1"]
    assert not executor.feeds[0].open
    assert all(kube.get("ns/p%d" % i)["status"]["providerID"] for i in range(2))


def test_polls_are_never_fed(tmp_path):
    kube, executor, m = burst(tmp_path, 0)
    kube.put(running_proxy("polled"))
    m.queue.add("ns/polled")
    m.process(m.queue.pop_due(10, 0))
    time.sleep(0.3)
    assert executor.runs[0][1] == []  # a get waits for a run of its own
    assert m.batcher.waiting("local") == ["ns/polled"]
    executor.release.set()
    settle(m)


def test_a_key_not_this_replicas_is_not_fed(tmp_path):
    kube, executor, m = burst(tmp_path, 2, owns=lambda key: key != "ns/p1")
    m.process(m.queue.pop_due(10, 0))
    wait_for(lambda: executor.runs[0][1] == ["ns/p0"])
    executor.release.set()
    settle(m)
    assert "ns/p1" not in executor.runs[0][1] and len(executor.runs) == 1
    assert not kube.get("ns/p1")["status"].get("providerID")  # left for the shard's owner


def test_stopping_closes_the_feed_and_writes_what_it_answered(tmp_path):
    kube, executor, m = burst(tmp_path, 2)
    m.process(m.queue.pop_due(10, 0))
    wait_for(lambda: len(executor.runs[0][1]) == 2)
    m.batcher.close()
    assert not executor.feeds[0].open
    executor.release.set()
    assert m.batcher.drain(30)
    settle(m)
    assert all(kube.get("ns/p%d" % i)["status"]["providerID"] for i in range(2))


def test_without_a_feed_window_runs_take_only_what_waited(tmp_path):
    _kube, executor, m = burst(tmp_path, 3, executor=FeedingExecutor(window=0.0), gather_while_busy=0.2)
    m.process(m.queue.pop_due(10, 0))
    wait_for(lambda: len(executor.runs) == 2)
    assert executor.feeds == []
    assert executor.runs[1] == (["ns/p0", "ns/p1", "ns/p2"], [])
    executor.release.set()
    settle(m)


def test_an_answered_key_goes_ahead_of_the_new_keys_waiting(tmp_path):
    """A burst: a fed item's answer comes while 20 new Proxies wait for their first reconcile;
    the answered key (one status write from Ready) is handed out before them."""
    kube, executor, m = burst(tmp_path, 1)
    m.process(m.queue.pop_due(10, 0))  # p0 fed to the running run
    for i in range(20):
        kube.put(proxy_object(name="n%d" % i, uid="u-n%d" % i))
        m.queue.add("ns/n%d" % i)
    wait_for(lambda: executor.runs[0][1] == ["ns/p0"] and "ns/p0" in m.answers.waiting())
    assert m.queue.pop_due(1, 0) == ["ns/p0"]
    m.process(["ns/p0"])  # its answer written: Ready
    assert kube.get("ns/p0")["status"]["state"] == "Running"
    executor.release.set()
    settle(m)


def test_a_run_that_carries_polls_takes_nothing_more(tmp_path):
    """Its gets come after its creates in the playbook: a feed would keep them waiting."""
    # The first run is full at once (batch_max 1: its feed closed) and holds one of two slots.
    kube, executor, m = burst(tmp_path, 0, batch_max=1, runs_in_flight=2)
    kube.put(running_proxy("polled"))
    kube.put(proxy_object(name="c0", uid="u-c0"))
    for key in ("ns/polled", "ns/c0"):
        m.queue.add(key)
    m.process(m.queue.pop_due(10, 0))  # the first run is busy: both wait
    executor.release.set()  # the first run ends and its slot takes both, in one run
    wait_for(lambda: len(executor.runs) == 2)
    assert executor.runs[1][0] == ["ns/c0", "ns/polled"]
    assert len(executor.feeds) == 1  # the first run's only: the run with a poll has none
    settle(m)


def test_the_last_free_slot_is_left_to_gather(tmp_path):
    """With 2 slots, a full feed's next creates do not take the last slot at once: they gather
    (here 30 s) as before, so a poll round is never kept waiting behind runs that take creates."""
    kube, executor, m = burst(tmp_path, 8, batch_max=5, runs_in_flight=2)
    m.process(m.queue.pop_due(10, 0))
    wait_for(lambda: len(executor.runs[0][1]) == 4)  # full at 5 (1 listed, 4 fed)
    time.sleep(0.5)
    assert len(executor.runs) == 1
    assert m.batcher.waiting("local") == ["ns/p%d" % i for i in range(4, 8)]
    executor.release.set()  # the run that ends takes them
    settle(m)
    assert all(kube.get("ns/p%d" % i)["status"]["providerID"] for i in range(8))
