"""Unit tests for core/deadline.py: remaining, budget, cancel, children, sleep."""

from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import (
    Deadline,
    DeadlineExceeded,
)


def test_no_limit():
    deadline = Deadline.none()
    assert deadline.remaining() is None
    assert deadline.budget(7) == 7.0
    assert not deadline.expired()
    deadline.check()


def test_remaining_counts_down_and_never_goes_negative():
    deadline = Deadline(0.2)
    first = deadline.remaining()
    assert 0.0 < first <= 0.2
    time.sleep(0.25)
    assert deadline.remaining() == 0.0
    assert deadline.expired()


def test_negative_seconds_means_already_expired():
    assert Deadline(-5).remaining() == 0.0


def test_budget_is_capped_by_the_deadline():
    deadline = Deadline(2)
    assert deadline.budget(0.5) == 0.5
    assert 1.0 < deadline.budget(30) <= 2.0
    assert Deadline(0).budget(30) == 0.001  # never zero: a zero timeout means "block" in some APIs


def test_check_raises_when_expired():
    with pytest.raises(DeadlineExceeded, match="create ran past its deadline"):
        Deadline(0).check("create")


def test_cancel():
    deadline = Deadline(60)
    deadline.check()
    deadline.cancel()
    assert deadline.cancelled and deadline.expired()
    with pytest.raises(DeadlineExceeded, match="get cancelled"):
        deadline.check("get")


def test_child_inherits_cancel_and_is_never_longer():
    parent = Deadline(1)
    child = parent.child(60)
    assert child.remaining() <= 1.0
    shorter = parent.child(0.1)
    assert shorter.remaining() <= 0.1
    unlimited = Deadline.none().child()
    assert unlimited.remaining() is None
    parent.cancel()
    assert child.cancelled and shorter.cancelled
    with pytest.raises(DeadlineExceeded):
        child.check()


def test_cancelling_a_child_leaves_the_parent_alone():
    parent = Deadline(60)
    child = parent.child(10)
    child.cancel()
    assert child.cancelled and not parent.cancelled


def test_sleep_returns_after_the_time():
    start = time.monotonic()
    Deadline(10).sleep(0.1)
    assert time.monotonic() - start >= 0.1


def test_sleep_raises_when_the_deadline_comes_first():
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        Deadline(0.1).sleep(30)
    assert time.monotonic() - start < 5


def test_sleep_wakes_on_cancel_from_another_thread():
    deadline = Deadline(60)
    timer = threading.Timer(0.1, deadline.cancel)
    timer.start()
    start = time.monotonic()
    try:
        with pytest.raises(DeadlineExceeded, match="cancelled"):
            deadline.sleep(30)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 5


def test_sleep_of_a_child_wakes_when_the_parent_is_cancelled():
    parent = Deadline(60)
    child = parent.child(30)
    timer = threading.Timer(0.1, parent.cancel)
    timer.start()
    try:
        with pytest.raises(DeadlineExceeded):
            child.sleep(30)
    finally:
        timer.cancel()
