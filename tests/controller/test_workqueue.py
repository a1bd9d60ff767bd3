"""The work queue: de-duplication, delayed requeue, one reconcile per key, per-key backoff."""

from __future__ import annotations

import threading

from egress_proxies_controller.kube.workqueue import WorkQueue


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_adding_a_key_twice_yields_it_once():
    q = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert sorted(q.pop_due(10, 0)) == ["a", "b"]
    assert q.pop_due(10, 0) == []


def test_delayed_keys_become_due_in_order():
    clock = Clock()
    q = WorkQueue(clock=clock)
    q.add_after("late", 10)
    q.add_after("soon", 1)
    assert q.pop_due(10, 0) == []
    clock.now += 1
    assert q.pop_due(10, 0) == ["soon"]
    clock.now += 9
    assert q.pop_due(10, 0) == ["late"]


def test_earlier_add_wins_over_a_later_one():
    clock = Clock()
    q = WorkQueue(clock=clock)
    q.add_after("a", 60)
    q.add("a")
    assert q.pop_due(10, 0) == ["a"]
    q.done("a")
    clock.now += 60
    assert q.pop_due(10, 0) == []  # the stale 60 s entry was superseded


def test_a_key_being_processed_is_not_handed_out_again_until_done():
    q = WorkQueue()
    q.add("a")
    assert q.pop_due(10, 0) == ["a"]
    q.add("a")  # an event while reconciling
    assert q.pop_due(10, 0) == []
    q.done("a")
    assert q.pop_due(10, 0) == ["a"]


def test_rate_limited_backoff_doubles_and_forget_resets():
    clock = Clock()
    q = WorkQueue(base_delay=1, max_delay=8, clock=clock)
    delays = []
    for _attempt in range(5):
        q.add_rate_limited("a")
        start = clock.now
        while not q.pop_due(1, 0):
            clock.now += 0.5
        delays.append(clock.now - start)
        q.done("a")
    assert delays == [1, 2, 4, 8, 8]
    q.forget("a")
    assert q.failures("a") == 0


def test_limit_and_blocking_wait():
    q = WorkQueue()
    for key in "abcde":
        q.add(key)
    assert len(q.pop_due(3, 0)) == 3
    got = []
    q2 = WorkQueue()
    thread = threading.Thread(target=lambda: got.extend(q2.pop_due(10, 5)))
    thread.start()
    q2.add("x")
    thread.join(2)
    assert got == ["x"]


def test_shutdown_wakes_waiters():
    q = WorkQueue()
    got = []
    thread = threading.Thread(target=lambda: got.append(q.pop_due(10, 30)))
    thread.start()
    q.shutdown()
    thread.join(2)
    assert got == [[]]


def test_keys_due_within_the_slack_of_the_first_come_with_it():
    clock = Clock()
    q = WorkQueue(clock=clock)
    q.add_after("round-1", 60.0)
    q.add_after("round-2", 60.0003)  # the same poll round, computed a moment later
    q.add_after("next", 61.0)
    clock.now += 60.0
    assert q.pop_due(10, 0) == ["round-1"]  # without slack a round splits in two batches
    q.done("round-1")
    q.add_after("round-1", 0.0)
    assert q.pop_due(10, 0, slack=0.25) == ["round-1", "round-2"]  # with it, one batch
    assert q.pop_due(10, 0, slack=0.25) == []  # "next" is not due: slack never starts a batch


def test_a_key_added_first_goes_ahead_of_keys_waiting_longer():
    clock = Clock()
    q = WorkQueue(clock=clock)
    for name in ("new1", "new2", "new3"):
        q.add(name)
        clock.now += 1
    q.add_first("answered")
    assert q.pop_due(2, 0) == ["answered", "new1"]
    assert q.pop_due(10, 0) == ["new2", "new3"]


def test_a_waiting_key_added_first_is_promoted_once_and_handed_out_once():
    clock = Clock()
    q = WorkQueue(clock=clock)
    q.add("a")
    q.add_after("b", 30)  # a poll later: promoted to now by its answer
    clock.now += 1
    q.add_first("b")
    q.add_first("b")
    assert q.pop_due(10, 0) == ["b", "a"]
    clock.now += 60
    assert q.pop_due(10, 0) == []  # the superseded entries are stale
    assert len(q) == 0


def test_a_key_added_first_while_processing_comes_back_first_after_done():
    q = WorkQueue()
    q.add("a")
    assert q.pop_due(10, 0) == ["a"]
    q.add("other")
    q.add_first("a")  # its answer came while it was reconciled
    q.done("a")
    assert q.pop_due(10, 0) == ["a", "other"]
