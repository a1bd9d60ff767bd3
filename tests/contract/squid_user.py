"""Act as the user Squid runs as (``proxy``) from a test running as root, to plant links where
that user could (issue 28), and check that root's files outside were never touched.

A forked child opens the directory as root (pytest's ``tmp_path`` has a 0700 ancestor the
Squid user could not cross, while a real ``stateDir`` such as ``/var/lib/egress-proxies`` is
reachable), then drops to ``proxy`` for good before acting, so every permission check on the
directory itself is the Squid user's.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import signal


def squid_user() -> pwd.struct_passwd:
    return pwd.getpwnam("proxy")


def plant_links(directory: str, links: dict) -> dict:
    """As ``proxy``, make each ``name -> target`` link in ``directory`` (replacing the entry);
    returns ``name -> True`` when the Squid user could plant it, ``False`` when refused."""
    planted = {}
    for name, target in links.items():
        planted[name] = _as_squid_user(directory, _replace_with_link(name, target))
    return planted


def kill_as_squid_user(directory: str, pid: int) -> bool:
    """As ``proxy``, SIGKILL ``pid`` (its own Squid, which dropped to that user)."""

    def act(_fd: int) -> None:
        os.kill(pid, signal.SIGKILL)

    return _as_squid_user(directory, act)


def _replace_with_link(name: str, target: str):
    def act(fd: int) -> None:
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        os.symlink(target, name, dir_fd=fd)

    return act


def _as_squid_user(directory: str, act) -> bool:
    entry = squid_user()
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child never returns into pytest
        code = 1
        try:
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
            act(fd)
            code = 0
        except PermissionError:
            code = 1
        except BaseException:
            code = 2
        os._exit(code)
    os.close(fd)
    _pid, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 1), "acting as proxy in %s failed unexpectedly (exit %d)" % (directory, code)
    return code == 0


def root_only_file(path) -> tuple:
    """A 0600 root file with known content; returns ``(path, digest)`` to check it later."""
    content = b"root only: must never be written by the provider\n"
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
    return str(path), digest(path)


def digest(path) -> tuple:
    """Content hash, mode and owner: what a write, chmod or chown through a link would change."""
    info = os.lstat(str(path))
    with open(str(path), "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest(), info.st_mode, info.st_uid, info.st_gid
