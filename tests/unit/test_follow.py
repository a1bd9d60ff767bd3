"""``proxy_instance``'s ``follow`` (issue 38, Ready as they come): an item whose instance is still
starting after its create is read again in the same run and answered as soon as it runs; the
reads hold none of the batch's slots, a window that ends is the last state read (never a
failure), a failing read keeps the last answer, and a bad window is refused naming the field
before anything is touched."""

from __future__ import annotations

import threading
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import batch, follow
from unit.module_process import run_module

MODULE = "ansible_collections.crawl.egress_proxies.plugins.modules.proxy_instance"


class StartingBackend:
    """A provider whose instances read Provisioning ``reads_before_running`` times, then
    Running (``None``: never); ``broken`` ids fail every read."""

    def __init__(self, reads_before_running, broken=()):
        self.reads_before_running, self.broken = reads_before_running, set(broken)
        self.reads: dict = {}
        self.lock = threading.Lock()

    def get(self, provider_id: str, deadline) -> contract.Instance:
        with self.lock:
            self.reads[provider_id] = self.reads.get(provider_id, 0) + 1
            seen = self.reads[provider_id]
        if provider_id in self.broken:
            raise errors.transient("get", "k", provider_id, "connection reset")
        running = self.reads_before_running is not None and seen > self.reads_before_running
        state = contract.RUNNING if running else contract.PROVISIONING
        return contract.Instance(
            id=provider_id,
            name=provider_id,
            uid="u-" + provider_id,
            state=state,
            ip="10.0.0.9" if running else "",
        )


def _created(provider_id: str) -> dict:
    return {
        "id": provider_id,
        "name": provider_id,
        "uid": "u-" + provider_id,
        "state": contract.PROVISIONING,
        "ip": "",
        "provider": "k",
        "changed": True,
        "failed": False,
    }


def _follow(backend, ids: list, window: float, concurrency: int = 1) -> tuple:
    """``ids`` created one after another (``concurrency`` at a time), each answered Provisioning;
    returns (the final results, [(index, result, seconds after start)] as they were heard)."""
    heard, started = [], time.monotonic()

    def on_done(index: int, result: dict) -> None:
        heard.append((index, result, time.monotonic() - started))

    follower = follow.Follower(lambda name: backend, window, on_done, 4)

    def finished(index: int, result: dict) -> None:
        if not follower.take(index, "k", result):
            on_done(index, result)

    results = batch.run(ids, _created, lambda item, exc: {"failed": True}, concurrency, on_done=finished)
    return follower.finish(results), heard


def test_a_starting_instance_is_answered_running_as_soon_as_a_read_says_so():
    results, heard = _follow(StartingBackend(reads_before_running=1), ["a", "b"], window=30)
    assert [r["state"] for r in results] == [contract.RUNNING, contract.RUNNING]
    assert results[0]["ip"] == "10.0.0.9" and results[0]["changed"] is True
    assert sorted(i for i, _r, _s in heard) == [0, 1]  # each heard once, with its final result
    assert all(r["state"] == contract.RUNNING for _i, r, _s in heard)
    assert max(s for _i, _r, s in heard) < 10, "answered only when the 30 s window ended"


def test_following_holds_no_slot_of_the_batch():
    """One slot, three items: each create runs while the earlier ones are still followed."""
    order = []

    def create(provider_id: str) -> dict:
        order.append((provider_id, time.monotonic()))
        return _created(provider_id)

    backend = StartingBackend(reads_before_running=2)
    follower = follow.Follower(lambda name: backend, 30, lambda index, result: None, 4)
    results = batch.run(
        ["a", "b", "c"],
        create,
        lambda item, exc: {"failed": True},
        1,
        on_done=lambda index, result: follower.take(index, "k", result),
    )
    assert order[-1][1] - order[0][1] < 1.0, "a followed item held the only slot: %r" % order
    assert [r["state"] for r in follower.finish(results)] == [contract.RUNNING] * 3


def test_a_window_that_ends_answers_the_last_state_read_and_no_failure():
    results, heard = _follow(StartingBackend(reads_before_running=None), ["slow"], window=2.5)
    assert results[0]["state"] == contract.PROVISIONING and results[0]["failed"] is False
    assert "msg" not in results[0] and "error_class" not in results[0]
    assert 2.0 <= heard[0][2] < 8.0  # answered when the window ended, not before, not much after


def test_a_read_that_fails_keeps_the_last_answer():
    backend = StartingBackend(reads_before_running=0, broken=["gone"])
    results, _heard = _follow(backend, ["gone", "fine"], window=4)
    assert results[0] == _created("gone")  # the create's own answer, untouched
    assert results[1]["state"] == contract.RUNNING
    assert backend.reads["gone"] >= 2  # read again (after 1 s, then 2 s) until the window ended


def test_failed_and_running_results_are_final_at_once():
    follower = follow.Follower(lambda name: StartingBackend(0), 30, lambda index, result: None, 1)
    assert not follower.take(0, "k", dict(_created("a"), failed=True))
    assert not follower.take(1, "k", dict(_created("b"), state=contract.RUNNING, ip="10.0.0.1"))
    assert not follower.take(2, "k", dict(_created("c"), id=""))
    assert follower.finish([1, 2, 3]) == [1, 2, 3]


def _local(tmp_path) -> dict:
    local = {"stateDir": str(tmp_path / "state"), "addressRange": "127.99.4.0/28"}
    return {"providers": [{"name": "l", "type": "local", "local": local}], "provider": "l"}


def test_a_bad_window_is_refused_naming_the_field_before_anything_is_touched(tmp_path):
    items = [{"uid": "follow-bad", "state": "present"}]
    for window, says in ((-1, "from 0 (off) to 600"), (601, "from 0 (off) to 600"), ("soon", "follow")):
        answer = run_module(tmp_path, MODULE, dict(_local(tmp_path), instances=items, follow=window))
        assert answer.get("failed"), answer
        assert "follow" in answer["msg"] and says in answer["msg"], answer["msg"]
        assert not (tmp_path / "state").exists() or not any((tmp_path / "state").iterdir())


def test_follow_is_refused_without_the_batch_form(tmp_path):
    answer = run_module(tmp_path, MODULE, dict(_local(tmp_path), uid="follow-single", follow=5))
    assert answer.get("failed") and "follow: only with instances" in answer["msg"], answer


def test_a_backlog_is_not_read_again_and_again():
    """200 instances that never start within 6 s: a round a second, each reading a few (the
    last round found none running), oldest first: a backend with a backlog is not asked again
    and again about what it has not got to."""
    backend = StartingBackend(reads_before_running=None)
    ids = ["b%03d" % i for i in range(200)]
    results, _heard = _follow(backend, ids, window=6, concurrency=16)
    assert all(r["state"] == contract.PROVISIONING and not r["failed"] for r in results)
    total = sum(backend.reads.values())
    assert total <= 16 + 6 * 4, "read %d times: every starting instance every second" % total
    assert backend.reads.get("b000", 0) >= 2  # the oldest were read again
