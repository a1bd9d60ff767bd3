# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The one reader for every file the modules and the controller read from an operator (the
providers file, credential files, kubeconfigs).

A plain ``open().read()`` blocks for good on a FIFO (no writer ever comes), reads a link to
``/dev/zero`` until memory runs out, and a parser's own message may quote the line it failed on,
which for a credential file or a providers file holding an ``apiKey`` is a secret. Here the file
is opened without blocking, checked to be a regular file before a byte is read, read up to
``MAX_FILE_BYTES``, decoded strictly, and every message gives the file's kind and a position,
never its content. The controller imports this file too (tests/unit/import_contracts.py), so
neither side can drift from the other.
"""

from __future__ import annotations

import os
import stat

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import path_trust

MAX_FILE_BYTES = 1024 * 1024


class FileProblem(Exception):
    """The file cannot be read or parsed within bounds; the message has no path prefix and
    quotes nothing of the content. ``unreadable``: the system's reason the file could not be
    opened or read (it may appear later, as a Secret being mounted does), ``""`` when it was
    refused for what it is."""

    def __init__(self, message: str, unreadable: str = ""):
        super().__init__(message)
        self.unreadable = unreadable


def read_bytes(path: str, what: str, trusted: bool = False) -> bytes:
    """The file's bytes, at most ``MAX_FILE_BYTES``. With ``trusted``, a path another user could
    change is refused before it is opened, when root reads it: the file names what root runs
    (path_trust.root_unsafe_reason)."""
    if trusted:
        reason = path_trust.root_unsafe_reason(path)
        if reason:
            raise FileProblem("%s is refused: %s" % (what, reason))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        reason = str(exc.strerror or exc)
        raise FileProblem("cannot read %s: %s" % (what, reason), unreadable=reason) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileProblem("%s is not a regular file (it is a %s)" % (what, _kind(mode)))
        os.set_blocking(fd, True)
        data = _read_bounded(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        reason = str(exc.strerror or exc)
        raise FileProblem("cannot read %s: %s" % (what, reason), unreadable=reason) from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise FileProblem("%s is larger than %d bytes" % (what, MAX_FILE_BYTES))
    return data


def read_text(path: str, what: str, trusted: bool = False) -> str:
    """``read_bytes`` decoded as strict UTF-8."""
    return decode(read_bytes(path, what, trusted))


def decode(data: bytes) -> str:
    """``data`` as strict UTF-8; a bad byte is named by its value and position only."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FileProblem(
            "not UTF-8: byte 0x%02x at line %d, column %d (offset %d)"
            % (data[exc.start], line, column, exc.start)
        ) from None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"


def _read_bounded(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
