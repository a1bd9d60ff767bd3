# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Whether a process itself listens on an IPv4 address and port (Linux ``/proc``).

A successful connect proves only that *something* listens there: another provider's Squid
whose range overlaps, or any other program. An instance is Running only when the listening
socket is one of its own Squid's file descriptors. ``holder`` asks the other way round, before
Squid starts: a Squid that cannot bind dies with "Address already in use" in its cache.log
only, so the provider says who holds the address instead (issue 40).
"""

from __future__ import annotations

import errno
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
        return bool(_socket_inodes(str(pid)) & inodes)
    except OSError:
        return False


def _socket_inodes(pid: str) -> set:
    """The socket inodes ``pid`` has open (a descriptor closed meanwhile is skipped)."""
    out = set()
    for fd in os.listdir("/proc/%s/fd" % pid):
        try:
            target = os.readlink("/proc/%s/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def _pids_holding(inodes: set) -> list:
    """``(pid, command name)`` of every process with one of the socket ``inodes`` open."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if not _socket_inodes(entry) & inodes:
                continue
            with open("/proc/%s/comm" % entry, encoding="utf-8", errors="replace") as handle:
                found.append((int(entry), handle.read().strip()))
        except OSError:
            continue  # gone, or not ours to look into
    return sorted(found)


def holder(address: str, port: int) -> str:
    """Who holds ``address:port`` so that Squid could not listen there ("" when it is free):
    "pid 123 (nginx)" where ``/proc`` tells, else "another process". Probed as Squid binds
    (SO_REUSEADDR), so a socket merely lingering in TIME_WAIT does not count."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((address, port))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            return ""  # not a conflict (an address not on this host): Squid's own error says it
    else:
        return ""
    finally:
        probe.close()
    try:
        pids = _pids_holding(_listening_inodes(address, port))
    except OSError:
        pids = []
    return ", ".join("pid %d (%s)" % item for item in pids) or "another process"
