# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Whether a process itself listens on an IPv4 address and port (Linux ``/proc``).

A successful connect proves only that *something* listens there: another provider's Squid
whose range overlaps, or any other program. An instance is Running only when the listening
socket is one of its own Squid's file descriptors.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct

TCP_TABLE = "/proc/net/tcp"
TCP_LISTEN = "0A"


def _hex_address(address: str, port: int) -> str:
    """``/proc/net/tcp``'s spelling: the address in host byte order, then the port, in hex."""
    packed = socket.inet_aton(str(ipaddress.IPv4Address(address)))
    return "%08X:%04X" % (struct.unpack("=I", packed)[0], port)


def _listening_inodes(address: str, port: int) -> set:
    wanted = {_hex_address(address, port), _hex_address("0.0.0.0", port)}
    inodes = set()
    with open(TCP_TABLE, encoding="ascii") as handle:
        next(handle, None)  # the header line
        for line in handle:
            fields = line.split()
            if len(fields) > 9 and fields[1] in wanted and fields[3] == TCP_LISTEN:
                inodes.add(fields[9])
    return inodes


def listens(pid: int, address: str, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on ``address:port`` (or on any address)."""
    try:
        inodes = _listening_inodes(address, port)
        if not inodes:
            return False
        fd_dir = "/proc/%d/fd" % pid
        for fd in os.listdir(fd_dir):
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return True
    except OSError:
        return False
    return False
