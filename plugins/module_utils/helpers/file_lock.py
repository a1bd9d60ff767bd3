# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""An exclusive ``flock`` on a file, waited for no longer than a deadline, that names its holder.

The holder writes ``pid=<pid> host=<host> since=<time>`` into the lock file once it holds the
lock, so a run that times out waiting can say which lock it waited for and who holds it (issue
28 §7: "wait ran past its deadline" alone does not tell an operator what to look at). The file
is never removed: unlinking a lock file another process waits on would let two holders in.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
import socket

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded

POLL_SECONDS = 0.05
MAX_HOLDER_CHARS = 200  # what is read back of a holder line: bounded, the file is writable by us only


def holder(path: str) -> str:
    """The holder line recorded in ``path``, or ``""`` when there is none (or it is unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        text = os.read(fd, MAX_HOLDER_CHARS).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)
    return " ".join(text.split())


def _record(fd: int) -> None:
    line = "pid=%d host=%s since=%s\n" % (
        os.getpid(),
        socket.gethostname(),
        datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )
    os.ftruncate(fd, 0)
    os.pwrite(fd, line.encode("utf-8"), 0)


def _acquire(fd: int, deadline, what: str, path: str) -> None:
    if deadline is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            try:
                deadline.check("lock %s" % what)
                deadline.sleep(POLL_SECONDS)
            except DeadlineExceeded as exc:
                raise DeadlineExceeded(
                    "lock %s: %s (lock file %s, held by %s)"
                    % (what, exc, path, holder(path) or "an unknown holder")
                ) from None


@contextlib.contextmanager
def hold(path: str, deadline=None, what: str = ""):
    """Hold the exclusive lock on ``path`` (created 0644 when missing, never through a symlink)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        _acquire(fd, deadline, what or path, path)
        try:
            _record(fd)
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
