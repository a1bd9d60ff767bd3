"""listening.listens: a process's own listening socket, read from /proc (issue 15)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import listening


def test_own_socket_is_found_and_another_process_does_not_hold_it():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert not listening.listens(os.getpid(), "127.0.0.1", port), "bound but not listening yet"
        sock.listen(1)
        assert listening.listens(os.getpid(), "127.0.0.1", port)
        assert not listening.listens(os.getpid(), "127.0.0.2", port)
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            assert not listening.listens(other.pid, "127.0.0.1", port), "the connect check's blind spot"
        finally:
            other.kill()
            other.wait()


def test_a_gone_process_listens_nowhere():
    assert not listening.listens(2**22 + 12345, "127.0.0.1", 1)
