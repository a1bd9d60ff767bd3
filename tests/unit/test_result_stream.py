"""``proxy_instance``'s ``result_stream`` (issue 38): each item's result leaves the module as soon
as that item finishes, one JSON line on a pipe or FIFO the caller reads while the run goes on
(the controller writes a Proxy's status from it before the batch ends); anything else is refused
before any item is touched, naming the field; the lines carry no secret."""

from __future__ import annotations

import json
import os
import threading

from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import batch
from unit.module_process import run_module

MODULE = "ansible_collections.crawl.egress_proxies.plugins.modules.proxy_instance"
PASSWORD = "SENTINEL-stream-password-5c1"


def test_each_result_is_heard_as_its_item_finishes_not_when_the_batch_does():
    first_heard = threading.Event()
    heard = []

    def work(item):
        if item == "slow":  # finishes only once the fast item's result was heard
            assert first_heard.wait(10), "the fast item's result was held back until the batch ended"
        return {"item": item}

    def on_done(index, result):
        heard.append((index, result["item"]))
        if index == 1:
            first_heard.set()

    results = batch.run(["slow", "fast"], work, lambda item, exc: {"failed": True}, 2, on_done=on_done)
    assert results == [{"item": "slow"}, {"item": "fast"}]  # the final results still in order
    assert heard == [(1, "fast"), (0, "slow")]  # in finishing order, each once


def _run(tmp_path, args: dict) -> dict:
    return run_module(tmp_path, MODULE, args, timeout=300)


def _args(tmp_path, stream: str, count: int) -> dict:
    local = {"stateDir": str(tmp_path / "state"), "addressRange": "127.99.3.0/28"}
    auth = {"username": "crawler", "password": PASSWORD}
    items = [{"uid": "stream-%d" % i, "state": "absent", "id": "local/gone-%d" % i} for i in range(count)]
    items.append({"uid": "stream-auth", "state": "absent", "auth": auth})
    return {
        "providers": [{"name": "l", "type": "local", "local": local}],
        "provider": "l",
        "instances": items,
        "invalid_items": "fail_item",
        "result_stream": stream,
    }


def test_a_fifo_receives_one_line_per_item_with_its_result_and_no_secret(tmp_path):
    fifo = str(tmp_path / "results")
    os.mkfifo(fifo, 0o600)
    lines = []

    def read():
        with open(fifo, encoding="utf-8") as handle:
            lines.extend(handle)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    answer = _run(tmp_path, _args(tmp_path, fifo, 3))
    reader.join(30)
    results = answer["results"]
    assert len(results) == 4
    entries = [json.loads(line) for line in lines]
    assert sorted(e["index"] for e in entries) == [0, 1, 2, 3]  # one line per item
    for entry in entries:
        assert entry["result"] == results[entry["index"]]  # the very result the module returns
    assert PASSWORD not in "".join(lines)


def test_a_regular_file_is_refused_naming_the_field_before_anything_is_touched(tmp_path):
    plain = tmp_path / "results.json"
    plain.write_text("")
    answer = _run(tmp_path, _args(tmp_path, str(plain), 2))
    assert answer["failed"] and answer["error_class"] == "permanent"
    assert answer["msg"].startswith("result_stream: ") and "not a pipe or FIFO" in answer["msg"]
    assert "results" not in answer and plain.read_text() == ""
    assert not (tmp_path / "state").exists() or not os.listdir(tmp_path / "state")
