"""A loopback port for a server a test starts (the controller's health and metrics, sshd,
kube-apiserver, etcd, Toxiproxy): one that nothing listens on and nothing else will be given.

Why not port 0: the kernel hands out a port for port 0 from its ephemeral range
(net.ipv4.ip_local_port_range, 32768-60999 by default), the same range every outgoing connection
takes its source port from, so a port chosen that way and released can be taken before the server
binds it. Seen: a controller exiting "--metrics-addr: cannot listen on '127.0.0.1:37711': Address
already in use" while the version matrix's playbooks ran beside the suite. A port below that
range is only ever taken by a listener that names it.
"""

from __future__ import annotations

import os
import random
import socket
import threading

LISTEN_PORTS = range(20000, 32768)

# A port is free when it is chosen, not when its server binds it: two choices before either
# binds could agree. So a process never hands out a port twice, and each pytest-xdist worker
# chooses from a slice of its own (every SLOTS-th port; a process that is no worker, such as the
# version matrix's pytest beside the suite, takes the last slice). Seen: a controller of
# test_e2e_shards.py exiting "--metrics-addr: cannot listen on '127.0.0.1:30215': Address already
# in use" in a fresh-clone run.
SLOTS = 8
_handed_out: set = set()
_lock = threading.Lock()


def slot(worker: str | None = None) -> int:
    """This process's slice of LISTEN_PORTS: the xdist worker's number (``gw3``: 3), modulo SLOTS
    but for the last slice, which is kept for processes that are no worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "") if worker is None else worker
    if worker.startswith("gw") and worker[2:].isdigit():
        return int(worker[2:]) % (SLOTS - 1)
    return SLOTS - 1


def ports_of(slice_number: int) -> range:
    """The ports of one slice."""
    return LISTEN_PORTS[slice_number::SLOTS]


def free_port() -> int:
    """A loopback port below the ephemeral range, of this process's slice, that nothing listens on
    now and that this process never handed out before."""
    ports = ports_of(slot())
    for _attempt in range(200):
        port = random.choice(ports)
        with _lock:
            if port in _handed_out:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    raise AssertionError(
        "no free loopback port in slice %d of %d-%d" % (slot(), LISTEN_PORTS[0], LISTEN_PORTS[-1])
    )
