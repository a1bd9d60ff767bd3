"""The Toxiproxy server of a test session: built once per machine (tests/cluster/build_toxiproxy.sh),
started on 127.0.0.1 at a free port, stopped by its pid."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error

from contract import pids
from listen_ports import free_port

from faults.toxiproxy import Toxiproxy

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(os.path.dirname(HERE), "cluster", "build_toxiproxy.sh")


def binary() -> str:
    """Path of toxiproxy-server (builds it on first use; progress lines go to stderr)."""
    out = subprocess.run([BUILD], check=True, stdout=subprocess.PIPE, text=True).stdout
    return os.path.join(out.strip().splitlines()[-1], "toxiproxy-server")


class ToxiproxyServer:
    def __init__(self, log_path: str):
        self.port = free_port()
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [binary(), "-host", "127.0.0.1", "-port", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.api = Toxiproxy("http://127.0.0.1:%d" % self.port)
        self._wait_ready()

    def _wait_ready(self, seconds: float = 15.0) -> None:
        end = time.monotonic() + seconds
        while True:
            try:
                self.api.version()
                return
            except (OSError, urllib.error.URLError):
                if self.process.poll() is not None or time.monotonic() > end:
                    self.stop()
                    raise RuntimeError(
                        "toxiproxy-server did not start; log: %s" % self.log_text()[-2000:]
                    ) from None
                time.sleep(0.05)

    def log_text(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def stop(self) -> None:
        pids.stop(self.process.pid, grace=5)
        self.process.wait(timeout=10)
        self._log.close()
