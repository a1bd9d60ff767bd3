"""SIGTERM stops the controller whichever thread the kernel hands it to.

In CI a SIGTERMed controller (tests/controller/test_e2e_leader.py, step 2) went on reconciling
for 60 s until it was SIGKILLed: its main thread waited in an untimed ``Event.wait()`` and the
handler that would set the Event runs only there, so a signal taken by another thread was never
acted on. Here the signal is sent to one chosen thread that is not the main one
(``pthread_kill``), the case that hung; the main thread waits exactly as the controller does.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

OLD_WAY = "signal.signal(signal.SIGTERM, lambda *_a: stop.set())"
NEW_WAY = "stop_signals.stop_on_signals(stop)"

SCRIPT = """
import signal, threading, time
from egress_proxies_controller import stop_signals
stop = threading.Event()
%s
busy = threading.Thread(target=time.sleep, args=(30,), daemon=True)
busy.start()
threading.Timer(0.5, signal.pthread_kill, (busy.ident, signal.SIGTERM)).start()
stop.wait()
print("stopped", flush=True)
"""


def _run(setup: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT % setup], capture_output=True, text=True, timeout=20, check=False
    )


def test_a_sigterm_taken_by_another_thread_sets_the_stop_event():
    done = _run(NEW_WAY)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"


def test_the_main_entry_point_installs_it():
    import egress_proxies_controller

    source = (pathlib.Path(egress_proxies_controller.__file__).parent / "__main__.py").read_text()
    assert "stop_on_signals(stop)" in source
    assert OLD_WAY not in source
