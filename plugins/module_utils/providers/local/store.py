# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The local provider's backend store: one directory per instance under ``<stateDir>/instances``.

An instance directory appears atomically (built under a temporary name, then renamed) with its
``instance.json`` (the marks, UID, installation, creation time, address and port) already
inside, so an instance never exists without its marks, and a crash leaves either nothing or a
complete record. Addresses are allocated under an exclusive lock on the state directory, so
concurrent creates, in threads or in separate module processes, never share an address.

Owners (issue 28): the instance directory and what only root writes in it (``instance.json``,
``squid.conf``, ``passwd``, ``process.json``, ``squid.out``) belong to the module's user; only
the ``run/`` subdirectory, where Squid writes its logs and core files, belongs to the user Squid
runs as. So the Squid user cannot plant a link where root writes. Every file is reached through
a directory descriptor with no-follow opens (``safe_files``), and instance directories of the
old layout (owned by the Squid user, logs beside the config) are taken back by ``adopt``.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import shutil
import tempfile

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import file_lock
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import safe_files

RECORD = "instance.json"
RUN = "run"  # Squid's own directory (logs, core files): the only one its user may write
INSTANCES = "instances"
LOCKS = "locks"
POOL_LOCK_PREFIX = ".pool-"  # ``.``: never an instance name, so never an instance's lock


class StoreError(Exception):
    """The store cannot be read or written (the provider classifies it)."""


class Store:
    def __init__(self, state_dir: str, address_range: str):
        self.state_dir = state_dir
        self.instances_dir = os.path.join(state_dir, INSTANCES)
        self.network = ipaddress.ip_network(address_range)

    def path(self, name: str) -> str:
        return os.path.join(self.instances_dir, name)

    @contextlib.contextmanager
    def opened(self, name: str):
        """A descriptor of the instance directory (``None`` when it does not exist), reached
        without following a link at ``instances`` or at the name."""
        try:
            with safe_files.opened_dir(self.instances_dir) as instances_fd:
                fd = safe_files.open_dir(name, instances_fd)
        except FileNotFoundError:
            yield None
            return
        except (NotADirectoryError, safe_files.UnsafeFile):
            raise StoreError("%s is not a directory (or is a symbolic link)" % self.path(name)) from None
        except OSError as exc:
            raise StoreError("cannot open %s: %s" % (self.path(name), exc)) from None
        try:
            yield fd
        finally:
            os.close(fd)

    def read(self, name: str):
        """The record of ``name``, or ``None`` when the instance does not exist."""
        with self.opened(name) as fd:
            if fd is None:
                return None
            try:
                return json.loads(safe_files.read_text(fd, RECORD))
            except FileNotFoundError:
                raise StoreError("instance directory %s has no %s" % (self.path(name), RECORD)) from None
            except (OSError, ValueError) as exc:
                raise StoreError("cannot read %s: %s" % (self.path(name), exc)) from None

    def adopt(self, name: str, owner=None) -> bool:
        """Bring an instance directory to the current layout; ``True`` when it changed.

        A directory of the old layout belongs to the user Squid runs as, who could plant links
        in it: it is taken back (owner and mode set on its descriptor, so a swapped path changes
        nothing) before root writes anything there, and gets its ``run/`` directory. Links the
        Squid user left behind stay inert: root writes only fresh files renamed into place.
        """
        with self.opened(name) as fd:
            if fd is None:
                return False
            changed = False
            info = os.fstat(fd)
            if info.st_uid != os.geteuid() or info.st_mode & 0o022:
                os.fchown(fd, os.geteuid(), os.getegid())
                os.fchmod(fd, 0o755)
                changed = True
            return _ensure_run_dir(fd, owner) or changed

    def names(self) -> list:
        """Every instance name; raises ``StoreError`` when the directory cannot be listed."""
        try:
            entries = os.listdir(self.instances_dir)
        except FileNotFoundError:
            if os.path.exists(self.state_dir) and not os.path.isdir(self.state_dir):
                raise StoreError("state directory %s is not a directory" % self.state_dir) from None
            return []
        except OSError as exc:
            raise StoreError("cannot list %s: %s" % (self.instances_dir, exc)) from None
        return sorted(e for e in entries if not e.startswith("."))

    @contextlib.contextmanager
    def locked(self, name: str = "", deadline=None):
        """An exclusive lock on the whole store (``name`` empty) or on one instance, waited for
        no longer than ``deadline`` (``DeadlineExceeded`` then, naming the lock file and its
        holder: another process holds it).

        Lock files live in ``<stateDir>/locks`` and are never removed: unlinking a lock file
        another process is waiting on would let two holders in.
        """
        locks = os.path.join(self.state_dir, LOCKS)
        try:
            os.makedirs(self.instances_dir, mode=0o755, exist_ok=True)
            os.makedirs(locks, mode=0o755, exist_ok=True)
        except OSError as exc:
            raise StoreError("cannot create %s: %s" % (self.instances_dir, exc)) from None
        what = "instance %s" % name if name else "store %s" % self.state_dir
        with file_lock.hold(os.path.join(locks, name or ".store"), deadline, what):
            yield

    def pool_lock_path(self, pool: str) -> str:
        """The lock a ``proxy_pool`` run of ``pool`` holds on this store for the whole run: the
        real path, so two providers on one stateDir name one lock."""
        return os.path.join(os.path.realpath(self.state_dir), LOCKS, POOL_LOCK_PREFIX + pool)

    def create(
        self,
        name: str,
        uid: str,
        installation: str,
        port: int,
        files: dict,
        owner=None,
        deadline=None,
        private=(),
        provider: str = "",
    ) -> dict:
        """Allocate an address and make the instance directory appear atomically.

        ``files`` maps file names to a callable ``(record) -> text`` so files that depend on the
        allocated address (squid.conf) are written inside the same atomic step; the ones named
        in ``private`` (the password file) are readable by ``owner``'s group only; ``owner``
        (``(uid, gid)`` of the user Squid runs as) gets the ``run/`` directory, nothing else.
        ``provider`` is recorded as the instance's owner (two providers may share a stateDir;
        each lists only its own). Returns the record. Caller holds no lock; this takes the
        store lock itself.
        """
        with self.locked(deadline=deadline):
            self._sweep_locked()  # a killed create's staging directory goes with the next create
            existing = self.read(name)
            if existing is not None:
                return existing
            record = {
                names.LABEL_MANAGED: names.LABEL_MANAGED_VALUE,
                names.LABEL_UID: uid,
                names.LABEL_INSTALL: installation,
                names.LABEL_PROVIDER: provider,
                "name": name,
                "createdAt": datetime.datetime.now(datetime.UTC).isoformat(),
                "address": self._free_address(),
                "port": port,
            }
            staging = tempfile.mkdtemp(prefix=".new-%s-" % name, dir=self.instances_dir)
            try:
                with safe_files.opened_dir(staging) as fd:
                    os.fchmod(fd, 0o755)
                    for file_name, render in files.items():
                        if file_name in private:
                            write_private(fd, file_name, render(record), owner)
                        else:
                            safe_files.write_atomic(fd, file_name, render(record))
                    safe_files.write_atomic(fd, RECORD, json.dumps(record, indent=2, sort_keys=True))
                    _ensure_run_dir(fd, owner)
                    os.fsync(fd)
                os.rename(staging, self.path(name))
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            return record

    def sweep_leftovers(self, deadline=None) -> list:
        """Remove the ``.new-*`` staging and ``.gone-*`` trash directories a killed process left
        (a SIGKILL between ``mkdtemp`` and the rename); returns their names.

        Safe under the store lock: a staging directory exists only while a create holds that
        lock, so one seen by the lock's holder belongs to a process that died. A trash directory
        is already renamed away from its instance; removing it twice is harmless.
        """
        if not os.path.isdir(self.instances_dir):
            return []
        with self.locked(deadline=deadline):
            return self._sweep_locked()

    def _sweep_locked(self) -> list:
        try:
            entries = os.listdir(self.instances_dir)
        except OSError:
            return []
        gone = sorted(e for e in entries if e.startswith((".new-", ".gone-")))
        for entry in gone:
            shutil.rmtree(os.path.join(self.instances_dir, entry), ignore_errors=True)
        return gone

    def remove(self, name: str) -> None:
        """Remove the directory atomically (rename away, then delete); idempotent."""
        target = self.path(name)
        if not os.path.isdir(target):
            return
        trash = tempfile.mkdtemp(prefix=".gone-%s-" % name, dir=self.instances_dir)
        try:
            os.rename(target, os.path.join(trash, name))
        except FileNotFoundError:
            pass
        shutil.rmtree(trash, ignore_errors=True)

    def _free_address(self) -> str:
        used = set()
        for other in self.names():
            try:
                record = self.read(other)
            except StoreError:
                continue
            if record and record.get("address"):
                used.add(record["address"])
        for host in self.network.hosts():
            text = str(host)
            if text not in used:
                return text
        raise StoreError("address range %s is exhausted (%d in use)" % (self.network, len(used)))


def _ensure_run_dir(dir_fd: int, owner) -> bool:
    """Make ``run/`` a real directory owned by Squid's user (``owner``); ``True`` when it was
    made. Anything else at that name (a planted link or file) is removed first, unfollowed."""
    try:
        with safe_files.opened_dir(RUN, dir_fd) as run_fd:
            if owner is not None and os.fstat(run_fd).st_uid != owner[0]:
                os.fchown(run_fd, owner[0], owner[1])
            return False
    except FileNotFoundError:
        pass
    except (NotADirectoryError, safe_files.UnsafeFile):
        safe_files.unlink(dir_fd, RUN)
    os.mkdir(RUN, 0o700, dir_fd=dir_fd)
    with safe_files.opened_dir(RUN, dir_fd) as run_fd:
        os.fchmod(run_fd, 0o700)
        if owner is not None:
            os.fchown(run_fd, owner[0], owner[1])
    return True


def write_private(dir_fd: int, name: str, text: str, owner=None) -> None:
    """Replace the password file atomically: root's, readable by Squid's group only (0640), or
    0600 when the module does not run as root (``owner`` ``None``); never the Squid user's to
    rewrite."""
    if owner is None:
        safe_files.write_atomic(dir_fd, name, text, 0o600)
    else:
        safe_files.write_atomic(dir_fd, name, text, 0o640, owner[1])
