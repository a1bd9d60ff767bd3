"""A run's ``instance_stream``: more items handed to a run while it works.

A burst of Proxies reaches the batcher over seconds (each key's finalizer is written first), and
a run that could take only what waited when it started left the rest waiting for another run and
another ansible start-up. The feed is a pipe this process owns: ``proxy_instance`` reads it
through this process's ``/proc`` entry (as it reads the items memfd, so nothing is created on
disk, cloud-init included) and starts each item as soon as its line arrives, until end of file.

Lines go out on a writer thread of the feed's own (a pipe holds 64 KiB: the caller never waits
for the module to read). ``close`` ends the feed (the module sees end of file once every line is
written); ``release``, after the run, refuses anything more and lets a writer blocked on a pipe
nobody reads any longer go. ``keys`` is the run's list of item keys, shared with its result
pipe: a fed item's key is appended before its line is written, so its index is known when its
result comes back.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading

from . import batch

log = logging.getLogger("egress_proxies_controller.runs.executor")
JOIN_TIMEOUT = 10.0  # seconds the writer may take after the run ended
_END = object()


class ItemFeed:
    def __init__(self):
        self.keys: list = []  # the run's item keys in module order (its listed ones set by the executor)
        self.fed: dict = {}  # key -> Action of every item fed (not the listed ones)
        self._lock = threading.Lock()
        self._open = True
        self._lines: queue.SimpleQueue = queue.SimpleQueue()
        self._read, self._write = os.pipe()  # neither is inherited by the run's processes
        self.path = "/proc/%d/fd/%d" % (os.getpid(), self._read)
        self._thread = threading.Thread(target=self._pump, name="item-feed", daemon=True)
        self._thread.start()

    def start(self, listed_keys: list) -> None:
        """The run's listed items come first: fed items are numbered after them."""
        with self._lock:
            self.keys[:0] = listed_keys

    def offer(self, key: str, action, fields: dict):
        """Hand ``key``'s call ``action`` to the run (``fields``: its create's module fields as
        ``run_inputs.resolve`` gave them). True: fed; False: the feed is closed (the call waits
        for another run); an ``Answer``: answered without the run (an input could not be read)."""
        encoded = batch.encode({key: action}, fields, list_threshold=1)
        if key in encoded.answers:
            return encoded.answers[key]
        line = json.dumps(encoded.instances[0]) + "\n"
        with self._lock:
            if not self._open:
                return False
            self.keys.append(key)
            self.fed[key] = action
            self._lines.put(line)
        return True

    def fed_calls(self) -> dict:
        """``{key: Action}`` of every item fed so far (a copy)."""
        with self._lock:
            return dict(self.fed)

    def close(self) -> None:
        """No more items: the module reads end of file after the lines already offered."""
        with self._lock:
            if not self._open:
                return
            self._open = False
            self._lines.put(_END)

    @property
    def open(self) -> bool:
        with self._lock:
            return self._open

    def release(self) -> None:
        """After the run: closed, and the writer let go even when nobody read its lines (once)."""
        self.close()
        with self._lock:
            read, self._read = self._read, -1
        if read >= 0:
            os.close(read)  # a writer blocked on a full pipe gets EPIPE now
            self._thread.join(JOIN_TIMEOUT)

    def _pump(self) -> None:
        broken = False
        try:
            while True:
                line = self._lines.get()
                if line is _END:
                    return
                data = memoryview(line.encode())
                while data and not broken:
                    try:
                        data = data[os.write(self._write, data) :]
                    except OSError:  # the run is gone: its unread items are answered at its end
                        broken = True
                        log.warning("item feed: the run stopped reading its items")
        finally:
            os.close(self._write)  # end of file for the module
