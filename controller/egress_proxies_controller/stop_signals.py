"""SIGTERM and SIGINT as a ``threading.Event``, set by a thread of its own.

Why not ``signal.signal(SIGTERM, lambda *_: stop.set())`` with the main thread in
``stop.wait()``: a process-directed signal may be taken by any thread, and Python runs its
handler only in the main thread, between bytecodes. A main thread blocked in an untimed
``Event.wait()`` is not woken when another thread took the signal, so the handler never ran:
in CI a SIGTERMed controller went on reconciling for 60 s until it was SIGKILLed. And a
handler that calls ``Event.set()`` can run inside ``Event.wait()`` of the same thread while it
holds the Event's lock, and deadlock there.

So the signals only wake a pipe (``signal.set_wakeup_fd``: written by the C-level handler in
whichever thread took the signal), and a daemon thread reading it sets the Event.
"""

from __future__ import annotations

import os
import select
import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _ignore(_signum, _frame) -> None:
    """A Python-level handler must exist for the wakeup fd to be written; the work is done by
    the reader thread."""


def stop_on_signals(stop: threading.Event, signals: tuple = STOP_SIGNALS) -> None:
    """``stop`` is set soon after any of ``signals`` arrives, whichever thread takes it. Call
    it from the main thread (``set_wakeup_fd`` and ``signal.signal`` require it)."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    wanted = {int(s) for s in signals}
    for sig in signals:
        signal.signal(sig, _ignore)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)

    def watch() -> None:
        while not stop.is_set():
            select.select([read_end], [], [])
            try:
                received = os.read(read_end, 512)
            except BlockingIOError:
                continue
            if wanted.intersection(received):
                stop.set()

    threading.Thread(target=watch, name="stop-signals", daemon=True).start()
