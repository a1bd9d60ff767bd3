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

import random
import socket

LISTEN_PORTS = range(20000, 32768)


def free_port() -> int:
    """A loopback port below the ephemeral range that nothing listens on now."""
    for _attempt in range(200):
        port = random.choice(LISTEN_PORTS)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free loopback port in %d-%d" % (LISTEN_PORTS[0], LISTEN_PORTS[-1]))
