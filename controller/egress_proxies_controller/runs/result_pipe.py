"""The run's ``result_stream``: a pipe this process owns, read while the run goes on.

``proxy_instance`` writes one JSON line per finished item to it (plugins' runners/result_stream.py);
a reader thread turns each line into that item's ``Answer`` at once (``on_answer(key, answer)``),
so a Proxy's status can be written as soon as its own item is done, not when the batch is. The
module opens the pipe's write end through this process's ``/proc`` entry (as it reads the items
memfd), so nothing is created on disk. The final results still answer every item: the stream is
an early copy, and an item answered twice must be applied once by the caller.
"""

from __future__ import annotations

import json
import logging
import os
import threading

from . import batch

log = logging.getLogger("egress_proxies_controller.runs.executor")
JOIN_TIMEOUT = 10.0  # seconds a reader may take after the run ended (all writers gone)


class ResultPipe:
    def __init__(self, keys: list, on_answer):
        self.keys, self.on_answer = keys, on_answer
        self._read, self._write = os.pipe()  # neither is inherited by the run's processes
        self.path = "/proc/%d/fd/%d" % (os.getpid(), self._write)
        self._thread = threading.Thread(target=self._pump, name="result-stream", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        with os.fdopen(self._read, "r", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                self._one(line)

    def _one(self, line: str) -> None:
        try:
            entry = json.loads(line)
            index, result = int(entry["index"]), entry["result"]
            key = self.keys[index]
        except (ValueError, TypeError, KeyError, IndexError):
            log.warning("result stream: a line that is no item result was ignored")
            return
        if not isinstance(result, dict):
            return
        try:
            self.on_answer(key, batch.answer_of(result))
        except Exception:  # the caller's failure: the final results still answer the key
            log.exception("result stream: applying the answer of %s failed", key)

    def close(self) -> None:
        """After the run: our write end closed, the reader finishes what the module wrote."""
        os.close(self._write)
        self._thread.join(JOIN_TIMEOUT)
