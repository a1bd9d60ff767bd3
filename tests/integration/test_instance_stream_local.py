"""``instance_stream`` through a real ``ansible-playbook`` run on the local provider (real Squid):
an item written to the FIFO while the run works is created, followed and answered on
``result_stream`` before the next line is written and the FIFO closed, so streamed items are
worked on while the run is open; ``results`` then hold the listed and the streamed items in
order, an invalid streamed line fails alone (never quoted when it is no JSON object, no secret
anywhere), ``--diff`` covers streamed items, and a path that is no pipe fails the task before
anything is created."""

from __future__ import annotations

import concurrent.futures
import errno
import fcntl
import json
import os
import queue
import threading
import time
import uuid

import pytest

from .local_env import instance_dirs
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
PASSWORD = "SENTINEL-fed-password-%s" % uuid.uuid4().hex[:8]
NOT_JSON = "cloud_init: SENTINEL-not-json-%s" % uuid.uuid4().hex[:8]
WAIT_SECONDS = 120


class ResultLines:
    """Reads the result FIFO on a thread of its own (its open waits for the module's)."""

    def __init__(self, path):
        self.path, self.lines = str(path), queue.Queue()
        self.seen: list = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with open(self.path, encoding="utf-8") as handle:
            for line in handle:
                self.lines.put(line)
        self.lines.put(None)

    def until_index(self, index: int, run) -> dict:
        """The entry of item ``index`` (reading on until it comes), failing when the run ended first."""
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                assert not run.done(), "the run ended before item %d was answered" % index
                continue
            assert line is not None, "the result stream ended before item %d was answered" % index
            self.seen.append(line)
            entry = json.loads(line)
            if entry["index"] == index:
                return entry
        raise AssertionError("item %d not answered within %d s" % (index, WAIT_SECONDS))

    def rest(self) -> list:
        """Every line up to the end of the stream (the module closed it)."""
        while (line := self.lines.get(timeout=WAIT_SECONDS)) is not None:
            self.seen.append(line)
        return self.seen

    def release(self) -> None:
        """Lets a reader still waiting for the module's open go (a run that failed first)."""
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        self._thread.join(5)


def _writer(path, run) -> int:
    """The FIFO's write end, once the module opened it for reading (it does after starting the
    listed items); blocking from then on."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            fd = os.open(str(path), os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            assert not run.done(), "the run ended without reading the instance stream"
            assert time.monotonic() < deadline, "the module did not open the instance stream"
            time.sleep(0.1)
            continue
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd


def _line(item) -> bytes:
    return (json.dumps(item) if not isinstance(item, str) else item).encode() + b"\n"


def test_streamed_items_are_worked_on_while_the_run_is_open(tmp_path, local):
    items_fifo, results_fifo = tmp_path / "items", tmp_path / "results"
    os.mkfifo(items_fifo, 0o600)
    os.mkfifo(results_fifo, 0o600)
    listed = [{"uid": "stream-listed-0"}]
    fed = {"uid": "stream-fed-1", "auth": {"username": "crawler", "password": PASSWORD}}
    tasks = [
        {
            "name": "stream",
            PI: {
                "provider": "local",
                "instances": listed,
                "invalid_items": "fail_item",
                "instance_stream": str(items_fifo),
                "result_stream": str(results_fifo),
                "follow": 30,
            },
            "ignore_errors": True,
        },
        {
            "name": "gone",
            PI: {"provider": "local", "state": "absent", "instances": [*listed, {"uid": fed["uid"]}]},
        },
    ]
    results = ResultLines(results_fifo)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        run = pool.submit(run_playbook, tmp_path, tasks, module_defaults=local, diff=True)
        try:
            writer = _writer(items_fifo, run)
            try:
                os.write(writer, _line(fed))
                answered = results.until_index(1, run)  # the fed item, answered while the run is open
                assert not run.done()
                assert answered["result"]["uid"] == fed["uid"] and answered["result"]["state"] == "Running"
                os.write(writer, _line({"uid": "stream-bad-2", "port": 0}))
                os.write(writer, _line(NOT_JSON))
            finally:
                os.close(writer)  # end of file: the run ends once every item finished
            lines = results.rest()
        finally:
            results.release()
        done = run.result()
    assert done.rc == 0, done.stdout[-3000:]  # the failed stream task is ignored; "gone" ran
    task = done["stream"]
    got = task["results"]
    assert [r["uid"] for r in got] == ["stream-listed-0", "stream-fed-1", "stream-bad-2", ""]
    assert [(r["state"], r["failed"]) for r in got[:2]] == [("Running", False), ("Running", False)]
    assert all(r["ip"].startswith("127.") and r["changed"] for r in got[:2])
    assert got[2]["failed"] and got[2]["error_class"] == "permanent"
    assert got[2]["msg"] == "instance_stream[1].port: 0 is not a port (1-65535)"
    assert got[3]["msg"] == "instance_stream[2]: not a JSON object" and got[3]["error_class"] == "permanent"
    assert task["failed"] and task["changed"] and task["msg"].startswith("2 of 4 instances failed: ")
    entries = [json.loads(line) for line in lines]
    assert sorted(e["index"] for e in entries) == [0, 1, 2, 3]  # one line per item, global indexes
    assert all(e["result"] == got[e["index"]] for e in entries)
    assert [d["after"]["name"] for d in task["diff"]] == [got[0]["name"], got[1]["name"]]
    said = done.stdout + done.stderr + "".join(lines)
    assert PASSWORD not in said and NOT_JSON not in said and "SENTINEL" not in said
    assert [r["state"] for r in done["gone"]["results"]] == ["absent", "absent"]


def test_a_path_that_is_no_pipe_fails_the_task_before_anything_is_created(tmp_path, local):
    plain = tmp_path / "items.jsonl"
    plain.write_text(json.dumps({"uid": "never-read"}) + "\n")
    task = {
        "provider": "local",
        "instances": [{"uid": "stream-refused-0"}],
        "invalid_items": "fail_item",
        "instance_stream": str(plain),
    }
    done = run_playbook(tmp_path, [{"name": "refused", PI: task}], module_defaults=local)
    refused = done["refused"]
    assert done.rc != 0 and refused["failed"] and refused["error_class"] == "permanent"
    assert (
        refused["msg"]
        == "instance_stream: %s is not a pipe or FIFO (a regular file or other kind is refused)" % plain
    )
    assert "results" not in refused and instance_dirs(tmp_path / "state") == []
