# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""File operations that never follow a link another user could have planted.

The module usually runs as root while Squid runs as ``proxy``. Any path root opens by name in a
directory ``proxy`` can write (an instance directory of the old layout, Squid's runtime
directory) could be swapped for a symbolic link to a root-only file between two steps, and root
would then write, append to or chmod that file (issue 28). So every operation here works on a
directory descriptor and a single name: the last component is opened with ``O_NOFOLLOW`` (a
link fails with ``ELOOP``, it is never followed), files are checked to be regular files, new
files are created with ``O_EXCL`` under a fresh name and renamed into place within the same
directory (a planted ``*.tmp`` link is never opened), and ownership and modes are set on the
open descriptor, never by path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW
MAX_READ = 1 << 20  # records, configs and password files are a few hundred bytes


class UnsafeFile(OSError):
    """A name that should be a regular file or directory is a link or something else."""


def _refuse(what: str, name: str) -> UnsafeFile:
    reason = "refusing %s: it is a symbolic link or not a regular one (nothing was followed)" % what
    return UnsafeFile(errno.ELOOP, reason, name)


def open_dir(name: str, dir_fd: int | None = None) -> int:
    """A descriptor of directory ``name`` (relative to ``dir_fd``), never through a link."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse("directory", name) from None
        raise


@contextlib.contextmanager
def opened_dir(name: str, dir_fd: int | None = None):
    """``open_dir`` as a context manager that closes the descriptor."""
    fd = open_dir(name, dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def _regular(fd: int, name: str) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refuse("file", name)


def read_text(dir_fd: int, name: str) -> str:
    """The text of regular file ``name`` in ``dir_fd`` (``O_NONBLOCK``: a FIFO never hangs)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse("file", name) from None
        raise
    _regular(fd, name)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_READ).decode("utf-8")


def open_append(dir_fd: int, name: str, mode: int = 0o644) -> int:
    """A descriptor appending to regular file ``name`` (created when missing), never a link's."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse("file", name) from None
        raise
    _regular(fd, name)
    return fd


def write_atomic(dir_fd: int, name: str, text: str, mode: int = 0o644, group: int | None = None) -> None:
    """Replace ``name`` in ``dir_fd`` atomically with ``text``: a fresh ``O_EXCL`` file, its
    mode (and ``group``) set on the descriptor before the first byte, fsynced, then renamed over
    ``name`` in the same directory (a link at ``name`` is replaced, never followed)."""
    tmp = ".%s.%s.tmp" % (name, secrets.token_hex(6))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=dir_fd)
    try:
        try:
            if group is not None:
                os.fchown(fd, -1, group)
            os.fchmod(fd, mode)
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def unlink(dir_fd: int, name: str) -> None:
    """Remove entry ``name`` (a link is removed itself, its target untouched); missing is fine."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)
