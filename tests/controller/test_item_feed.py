"""The run's ``instance_stream`` (runs/item_feed.py): items handed to a run while it works.

What the module reads is checked line by line through the pipe's ``/proc`` path, as the module
opens it; and a run that stops reading never keeps the controller's writer (or its caller) waiting.
"""

from __future__ import annotations

import json
import threading
import time

from egress_proxies_controller.proxy.reconciler import CREATE, DELETE, TRANSIENT, Action
from egress_proxies_controller.runs.item_feed import ItemFeed


def delete(name: str) -> Action:
    return Action(DELETE, "Deleting", "local", "local/" + name, name, "uid-" + name)


def create(name: str) -> Action:
    return Action(CREATE, "Provisioning", "local", "", name, "uid-" + name)


def read_all(path: str, lines: list) -> threading.Thread:
    """A reader of the feed as the module is one: until end of file."""

    def read() -> None:
        with open(path, encoding="utf-8") as feed:
            for line in feed:
                lines.append(json.loads(line))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_fed_items_follow_the_listed_ones_and_end_of_file_comes_after_close():
    feed = ItemFeed()
    lines = []
    reader = read_all(feed.path, lines)
    assert feed.offer("ns/b", delete("b"), {}) is True  # offered before the run starts
    feed.start(["ns/a"])
    assert feed.offer("ns/c", delete("c"), {}) is True
    deadline = time.monotonic() + 10
    while len(lines) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [line["name"] for line in lines] == ["b", "c"]  # read while the feed is still open
    assert reader.is_alive()
    assert feed.keys == ["ns/a", "ns/b", "ns/c"]  # the result stream's index -> key
    assert lines[0] == {"provider": "local", "uid": "uid-b", "name": "b", "state": "absent", "id": "local/b"}
    feed.close()
    reader.join(10)
    assert not reader.is_alive()
    assert feed.offer("ns/d", delete("d"), {}) is False  # closed: the call waits for another run
    assert set(feed.fed_calls()) == {"ns/b", "ns/c"}
    feed.release()
    feed.release()  # twice is harmless


def test_a_create_whose_inputs_could_not_be_read_is_answered_without_the_run():
    feed = ItemFeed()
    answer = feed.offer("ns/a", create("a"), {"ns/a": LookupError("secret ns/s: not found")})
    assert answer is not True and answer is not False
    assert (answer.ok, answer.error_class) == (False, TRANSIENT)
    assert "secret ns/s" in answer.message
    assert feed.keys == [] and feed.fed_calls() == {}
    feed.release()


def test_a_create_is_fed_with_its_module_fields():
    feed = ItemFeed()
    lines = []
    reader = read_all(feed.path, lines)
    fields = {"ns/a": {"namespace": "ns", "port": 3128, "cloud_init": "#cloud-config\n"}}
    assert feed.offer("ns/a", create("a"), fields) is True
    feed.close()
    reader.join(10)
    assert lines == [
        {
            "provider": "local",
            "uid": "uid-a",
            "name": "a",
            "state": "present",
            "namespace": "ns",
            "port": 3128,
            "cloud_init": "#cloud-config\n",
        }
    ]
    feed.release()


def test_a_run_that_never_reads_keeps_no_one_waiting():
    """More lines than a pipe holds (64 KiB), nobody reading: offers return at once, and the
    release after the run lets the blocked writer go."""
    feed = ItemFeed()
    big = {"ns/x%d" % i: {"cloud_init": "#cloud-config\n" + "x" * 4096} for i in range(64)}
    started = time.monotonic()
    for i in range(64):
        assert feed.offer("ns/x%d" % i, create("x%d" % i), big) is True
    assert time.monotonic() - started < 5  # never blocked on the pipe
    feed.release()
    assert not feed._thread.is_alive()  # the writer got EPIPE and ended
