# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""``result_stream``: each batch item's result, written as soon as it is known.

The controller hands ``proxy_instance`` a pipe (or FIFO) it reads while the run goes on, so a
Proxy's status is written when its own item finishes, not when the whole batch does. One JSON
line per finished item: ``{"index": i, "result": {...}}``, the same result the module returns in
``results`` (free of secrets: no credential, password or cloud-init is ever part of an item's
result). Only a pipe or FIFO is accepted, so nothing lands in a regular file on disk.
"""

from __future__ import annotations

import json
import os
import stat
import threading

FIELD = "result_stream"


def problem(path) -> str:
    """Why ``path`` cannot be the stream (empty: it can): it must be an existing pipe or FIFO."""
    return pipe_problem(FIELD, path)


def pipe_problem(field: str, path) -> str:
    """Why ``path``, given as ``field``, is no existing pipe or FIFO (empty: it is, or it is None).

    Shared by both controller pipes (``result_stream`` and ``instance_stream``): a regular file
    would keep results (or take items) on disk, and a directory or device has no lines at all."""
    if path is None:
        return ""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return "%s: cannot use %s: %s" % (field, path, exc.strerror)
    if not stat.S_ISFIFO(mode):
        return "%s: %s is not a pipe or FIFO (a regular file or other kind is refused)" % (field, path)
    return ""


class ResultStream:
    """Writes one line per finished item; the lock keeps lines from many threads whole."""

    def __init__(self, path: str):
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115  # closed by close()
        self._lock = threading.Lock()
        self._broken = False

    def write(self, index: int, result: dict) -> None:
        """Best effort: a reader that went away never fails the run (the final results still
        answer every item)."""
        line = json.dumps({"index": index, "result": result}, sort_keys=True) + "\n"
        with self._lock:
            if self._broken:
                return
            try:
                self._file.write(line)
                self._file.flush()
            except (OSError, ValueError):
                self._broken = True

    def close(self) -> None:
        with self._lock:
            try:
                self._file.close()
            except OSError:
                pass
