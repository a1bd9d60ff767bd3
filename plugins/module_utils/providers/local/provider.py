# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ``local`` provider: each instance is a real Squid process on its own loopback address.

Contract profile: create submits (Squid is started, readiness comes from ``get``); delete waits
until the process and its directory are gone; the IP is assigned at create (an address of
``addressRange``); the marks, UID and creation time are written into the instance directory
before Squid starts; ``list_by_tag`` scans the state directory and fails as a whole when the
directory cannot be read. ``CreateRequest.placement`` and ``cloud_init`` are ignored: a local
Squid has nowhere to put them (docs/local-provider.md). ``CreateRequest.auth`` becomes the
instance's 0600 password file (a salted hash, owned by the user Squid runs as) and basic auth in
its squid.conf; ``sync_auth`` rotates it in place and has the running Squid reconfigure.
"""

from __future__ import annotations

import datetime
import logging
import os
import pwd
import shutil
import socket
import subprocess

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.error_seam import ErrorSeam
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.squid_conf import (
    DEFAULT_AUTH_HELPER,
    SquidSettings,
    render,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import ownership, timestamps
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import (
    listening,
    process,
    safe_files,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.config import (
    find_squid,
    refusal,
    state_dir_refusal,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.store import (
    RUN,
    Store,
    StoreError,
    write_private,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.backend_spans import backend_call

ID_PREFIX = "local/"
STARTUP_GRACE_SECONDS = 30.0
CONNECT_BUDGET_SECONDS = 1.0
PASSWD = "passwd"  # the instance's password file, relative to its directory like its logs

log = logging.getLogger("crawl.egress_proxies.providers.local")


class SquidMissing(Exception):
    """The configured Squid binary is not installed: fixing the config or host resolves it."""


class SquidRefused(SquidMissing):
    """The Squid binary is one another user could change: root never runs it (issue 40)."""


_BY_TYPE = (
    (DeadlineExceeded, errors.TRANSIENT),
    (SquidMissing, errors.PERMANENT),
    ((PermissionError, safe_files.UnsafeFile), errors.PERMANENT),  # a planted link stays until removed
)


def classify(exc: BaseException) -> str:
    """The one mapping from local failures to error classes."""
    known = errors.class_by_type(exc, _BY_TYPE)
    if known:
        return known
    if isinstance(exc, StoreError) and "exhausted" in str(exc):
        return errors.QUOTA_EXCEEDED
    if isinstance(exc, OSError) and exc.errno is not None and exc.errno == 28:  # ENOSPC
        return errors.QUOTA_EXCEEDED
    return errors.TRANSIENT


def parse_id(provider_id: str) -> str:
    """``local/<name>`` -> name; ``ValueError`` for anything else."""
    if not isinstance(provider_id, str) or not provider_id.startswith(ID_PREFIX):
        raise ValueError("malformed local provider id %r: want local/<name>" % (provider_id,))
    name = provider_id[len(ID_PREFIX) :]
    if not names.is_dns_label(name):
        raise ValueError("malformed local provider id %r: the name must be a DNS label" % (provider_id,))
    return name


class LocalProvider(contract.Provider, contract.Checker, ErrorSeam):
    type_name = "local"
    supports_auth = True
    _parse_id = staticmethod(parse_id)  # ErrorSeam's hook

    def __init__(self, name: str, installation: str, block):
        super().__init__(name, installation)
        self.config = block
        self.store = Store(block.state_dir, block.address_range)
        self._list_problems = []

    # -- helpers -------------------------------------------------------------------------

    def _fail(self, op: str, provider_id: str, exc: BaseException) -> errors.ProviderError:
        """ErrorSeam's hook."""
        return errors.wrap(classify(exc), op, self.name, provider_id, exc)

    def _squid_user(self):
        """Squid refuses to run as root, so as root it drops to Debian's ``proxy`` user."""
        if os.geteuid() != 0:
            return None
        for candidate in ("proxy", "squid", "nobody"):
            try:
                entry = pwd.getpwnam(candidate)
            except KeyError:
                continue
            return candidate, entry.pw_uid, entry.pw_gid
        return None

    def _owner(self):
        """``(uid, gid)`` of the user Squid runs as, or ``None`` when not running as root."""
        squid_user = self._squid_user()
        return squid_user[1:] if squid_user else None

    def _squid_binary(self) -> str:
        found = find_squid(self.config.squid_binary)
        if not found:
            raise SquidMissing(
                "squid binary %r not found (install squid or set squidBinary)" % self.config.squid_binary
            )
        refused = refusal(found)  # checked again where it is run: the file may have changed since
        if refused:
            raise SquidRefused("local.squidBinary: %s" % refused)
        return found

    def _squid_conf(self, name: str, record: dict, squid_user, with_auth: bool) -> str:
        # Paths are relative to Squid's working directory, the instance directory: Squid opens
        # its logs (and its auth helper the password file) after dropping to the ``proxy`` user,
        # who may not be able to traverse stateDir's ancestors (a 0700 parent such as pytest's
        # tmp_path or a home directory). What Squid writes goes to ``run/``, the only directory
        # its user owns; the instance directory itself is root's (issue 28), so no core file.
        return render(
            SquidSettings(
                listen="%s:%d" % (record["address"], record["port"]),
                allowed=tuple(self.config.allowed_source_ranges),
                pid_file="none",
                cache_log="%s/cache.log" % RUN,
                access_log="%s/access.log" % RUN,
                effective_user=squid_user[0] if squid_user else "",
                coredump_dir=".",  # Squid's working directory: relative paths stay as above
                visible_hostname=name,
                outgoing_address=record["address"],
                auth_file=PASSWD if with_auth else "",
            )
        )

    def _files(self, name: str, squid_user, auth) -> dict:
        files = {process.CONF: lambda record: self._squid_conf(name, record, squid_user, auth is not None)}
        if auth is not None:
            files[PASSWD] = lambda _record: auth.passwd_line()
        return files

    @staticmethod
    def _auth_helper(auth) -> None:
        if auth is not None and not os.access(DEFAULT_AUTH_HELPER, os.X_OK):
            raise SquidMissing(
                "auth helper %s not found (Debian's squid package ships it)" % DEFAULT_AUTH_HELPER
            )

    def _auth_differs(self, name: str, auth) -> bool:
        with self.store.opened(name) as fd:
            try:
                current = safe_files.read_text(fd, PASSWD) if fd is not None else None
            except FileNotFoundError:
                current = None
        if current is None:
            return auth is not None
        return auth is None or not auth.matches(current)

    def _adopt(self, name: str, record: dict) -> None:
        """Take an instance directory of the old layout back from the Squid user before root
        writes in it, and rewrite its squid.conf (and password file) for the new layout."""
        if not self.store.adopt(name, self._owner()):
            return
        with self.store.opened(name) as fd:
            try:
                # A link at passwd fails here (permanent, naming it): never read through, and
                # never taken for "no auth", which would open the proxy to every allowed source.
                current = safe_files.read_text(fd, PASSWD)
            except FileNotFoundError:
                current = None
            if current is not None:
                write_private(fd, PASSWD, current, self._owner())
            conf = self._squid_conf(name, record, self._squid_user(), current is not None)
            safe_files.write_atomic(fd, process.CONF, conf)
        log.info("provider=%s name=%s instance directory moved to the current layout", self.name, name)

    def _rewrite_auth(self, name: str, record: dict, auth) -> None:
        """Password file first, then the squid.conf that names it; then Squid rereads both."""
        self._adopt(name, record)
        with self.store.opened(name) as fd:
            if auth is not None:
                write_private(fd, PASSWD, auth.passwd_line(), self._owner())
            conf = self._squid_conf(name, record, self._squid_user(), auth is not None)
            safe_files.write_atomic(fd, process.CONF, conf)
            if auth is None:
                safe_files.unlink(fd, PASSWD)
        state, pid = process.status(self.store.path(name))
        if state != process.DEAD:
            process.signal_instance(pid, name, "reconfigure")

    @staticmethod
    def _accepts(address: str, port: int, deadline) -> bool:
        try:
            with socket.create_connection((address, port), timeout=deadline.budget(CONNECT_BUDGET_SECONDS)):
                return True
        except OSError:
            return False

    def _serves(self, name: str, pid: int, address: str, port: int, deadline) -> bool:
        """The readiness probe, in its span ``squid.probe``: this Squid holds the listening
        socket and accepts a connection."""
        attributes = {
            "local.instance": name,
            "process.pid": pid,
            "server.address": address,
            "server.port": port,
        }
        with backend_call("squid.probe", attributes) as span:
            listens = listening.listens(pid, address, port)
            ready = listens and self._accepts(address, port, deadline)
            span.set_attribute("local.listening", listens)
            span.set_attribute("local.ready", ready)
            return ready

    def _instance(self, name: str, record: dict, deadline) -> contract.Instance:
        directory = self.store.path(name)
        state, pid = process.status(directory)
        created_at = timestamps.parse(record.get("createdAt"))
        if state == process.ALIVE:
            deadline.check("get")
            address, port = record["address"], int(record["port"])
            # Its own Squid must hold the listening socket: a connect alone may reach another
            # process on that address and port (listening.py).
            if self._serves(name, pid, address, port, deadline):
                phase = contract.RUNNING
            else:
                phase = contract.PROVISIONING
        elif state == process.SUSPENDED:
            phase = contract.STOPPED
        else:
            started = process.read_record(directory)
            recently = (
                started is None
                and created_at is not None
                and (datetime.datetime.now(datetime.UTC) - created_at).total_seconds() < STARTUP_GRACE_SECONDS
            )
            phase = contract.PROVISIONING if recently else contract.STOPPED
        return contract.Instance(
            id=ID_PREFIX + name,
            name=name,
            uid=record.get(names.LABEL_UID, ""),
            state=phase,
            ip=record["address"] if phase == contract.RUNNING else "",
            created_at=created_at,
            installation=record.get(names.LABEL_INSTALL, ""),
        )

    def _ensure_running(self, name: str, deadline) -> None:
        with self.store.locked(name, deadline):
            record = self.store.read(name)
            if record is not None:
                self._adopt(name, record)
            state, pid = process.status(self.store.path(name))
            if state == process.ALIVE:
                return
            if state == process.SUSPENDED:
                process.signal_instance(pid, name, "resume")  # it carries on where it was
                return
            deadline.check("create")
            self._refuse_taken_address(name, record)
            pid = process.start(self._squid_binary(), self.store.path(name), name)
            log.info("provider=%s op=create name=%s started squid pid=%d", self.name, name, pid)

    def _refuse_taken_address(self, name: str, record) -> None:
        """Squid cannot listen where another process does: say who, where, and what to do."""
        if record is None:
            return
        address, port = record["address"], int(record["port"])
        held_by = listening.holder(address, port)
        if held_by:
            raise errors.address_in_use(
                "create",
                self.name,
                ID_PREFIX + name,
                "address %s:%d is in use by %s, so Squid cannot listen there: stop that process "
                "or move it off %s:%d (this instance keeps its address and port; another port "
                "needs a new instance)" % (address, port, held_by, address, port),
            )

    def _refuse_foreign(self, op: str, provider_id: str, record) -> None:
        """An instance another provider on this stateDir made is not this provider's to adopt or
        delete: a name is never on two providers at once."""
        if record is not None and not names.provider_owns(record, self.name):
            raise errors.permanent(
                op,
                self.name,
                provider_id,
                "instance %s belongs to provider %s (they share stateDir %s)"
                % (provider_id[len(ID_PREFIX) :], record.get(names.LABEL_PROVIDER), self.config.state_dir),
            )

    # -- contract ------------------------------------------------------------------------

    def pool_lock_path(self, pool: str) -> str:
        return self.store.pool_lock_path(pool)

    def fixed_fields(self, provider_id: str, deadline) -> dict:
        try:
            record = self.store.read(parse_id(provider_id))
        except (ValueError, StoreError):
            return {}
        return {"port": int(record["port"])} if record and "port" in record else {}

    def capacity(self) -> tuple:
        hosts = max(0, self.store.network.num_addresses - (2 if self.store.network.prefixlen < 31 else 0))
        return hosts, "addressRange %s has %d addresses" % (self.store.network, hosts)

    def backend_key(self) -> str:
        return "local:" + os.path.realpath(self.config.state_dir)

    def id_for(self, name, placement, namespace=""):
        return ID_PREFIX + name if names.is_dns_label(name) else None

    def name_in_id(self, provider_id):
        return parse_id(provider_id)

    def create(self, req: contract.CreateRequest, deadline) -> str:
        provider_id = ID_PREFIX + req.name
        if not names.is_dns_label(req.name):
            raise errors.permanent("create", self.name, req.name, "name %r is not a DNS label" % req.name)
        if not req.uid:
            raise errors.permanent("create", self.name, provider_id, "uid is required (it is the GC mark)")
        if not 1 <= int(req.port) <= 65535:
            raise errors.permanent("create", self.name, provider_id, "port %r is not 1-65535" % req.port)
        log.info("provider=%s op=create request=%s", self.name, req.describe())
        with self.operation("create", provider_id, parse=False):
            deadline.check("create")
            self._squid_binary()  # fail before anything is written when Squid is missing
            existing = self.store.read(req.name)
            self._refuse_foreign("create", provider_id, existing)
            # Adopt only our own instance: one without a UID (not made by create, which writes
            # the UID atomically) belongs to someone else just as much as one with another UID.
            if existing is not None and existing.get(names.LABEL_UID) != req.uid:
                raise errors.permanent(
                    "create",
                    self.name,
                    provider_id,
                    "instance %s exists and belongs to uid %r, not %s"
                    % (req.name, existing.get(names.LABEL_UID, ""), req.uid),
                )
            self._auth_helper(req.auth)
            if existing is not None and req.auth is not None:
                self.sync_auth(provider_id, req.auth, deadline)  # before a stopped Squid restarts
            if existing is None:
                self.store.create(
                    req.name,
                    req.uid,
                    self.installation,
                    int(req.port),
                    self._files(req.name, self._squid_user(), req.auth),
                    self._owner(),
                    deadline=deadline,
                    private=(PASSWD,),
                    provider=self.name,
                )
                # A concurrent create of the same name may have won the race: re-check the UID.
                record = self.store.read(req.name)
                if record is not None and record.get(names.LABEL_UID) != req.uid:
                    raise errors.permanent(
                        "create", self.name, provider_id, "instance %s was created for another uid" % req.name
                    )
            self._ensure_running(req.name, deadline)
        return provider_id

    def sync_auth(self, provider_id: str, auth, deadline, apply: bool = True) -> bool:
        with self.operation("sync_auth", provider_id) as name:
            deadline.check("sync_auth")
            self._auth_helper(auth)
            with self.store.locked(name, deadline):
                record = self.store.read(name)
                if record is None:
                    raise errors.not_found("sync_auth", self.name, provider_id, "no instance %s" % name)
                if not names.is_managed(record):
                    raise errors.permanent(
                        "sync_auth", self.name, provider_id, "instance %s is not managed (no marks)" % name
                    )
                if not self._auth_differs(name, auth):
                    return False
                if apply:
                    self._rewrite_auth(name, record, auth)
                    log.info(
                        "provider=%s op=sync_auth id=%s credentials %s",
                        self.name,
                        provider_id,
                        "replaced" if auth is not None else "removed",
                    )
                return True

    def get(self, provider_id: str, deadline) -> contract.Instance:
        with self.operation("get", provider_id) as name:
            deadline.check("get")
            record = self.store.read(name)
            if record is None or not names.provider_owns(record, self.name):
                raise errors.not_found("get", self.name, provider_id, "no instance %s" % name)
            return self._instance(name, record, deadline)

    def delete(self, provider_id: str, deadline) -> None:
        with self.operation("delete", provider_id) as name:
            deadline.check("delete")
            with self.store.locked(name, deadline):
                record = self.store.read(name)
                if record is None:
                    # No directory, yet a Squid started from it may still serve (an older
                    # version removed the directory first): it is this instance's, stop it.
                    process.stop(self.store.path(name), name, deadline)
                    return
                self._refuse_foreign("delete", provider_id, record)
                refusal = ownership.foreign(
                    "instance %s" % name,
                    names.is_managed(record),  # a hand-made directory is not ours to remove
                    record.get(names.LABEL_INSTALL) or "",
                    self.installation,
                )
                if refusal:
                    raise errors.permanent("delete", self.name, provider_id, refusal)
                process.stop(self.store.path(name), name, deadline)
                self.store.remove(name)
            log.info("provider=%s op=delete id=%s removed", self.name, provider_id)

    def collect_leftovers(self, deadline) -> list:
        with self.operation("gc", parse=False):
            gone = self.store.sweep_leftovers(deadline)
        for entry in gone:
            log.info("provider=%s op=gc removed leftover directory %s", self.name, entry)
        return gone

    def list_problems(self) -> list:
        return list(self._list_problems)

    def list_by_tag(self, deadline) -> list:
        out, problems = [], []
        self._list_problems = problems
        with self.operation("list", parse=False):
            deadline.check("list")  # a cancelled list fails even when there is nothing to list
            for name in self.store.names():
                deadline.check("list")
                try:
                    record = self.store.read(name)
                except StoreError as exc:
                    log.warning(
                        "provider=%s op=list skipping unreadable instance %s: %s", self.name, name, exc
                    )
                    problems.append((ID_PREFIX + name, "instance %s left out of the list: %s" % (name, exc)))
                    continue
                if record is None or not names.is_managed(record):
                    continue
                if record.get(names.LABEL_INSTALL) != self.installation:
                    continue
                if not names.provider_owns(record, self.name):
                    continue  # another provider's on a shared stateDir: listed by that one
                out.append(self._instance(name, record, deadline))
        return out

    def check(self, deadline) -> list:
        return [self._check_squid(deadline), self._check_state_dir()]

    def _check_squid(self, deadline) -> contract.TargetStatus:
        details = {"binary": self.config.squid_binary}
        try:
            binary = self._squid_binary()
            details["binary"] = binary
            out = subprocess.run(
                [binary, "-v"],
                capture_output=True,
                text=True,
                timeout=deadline.budget(5.0),
                check=False,
            )
        except SquidRefused as exc:
            return contract.TargetStatus(
                "squid", details["binary"], False, "SquidNotRunnable", str(exc), details
            )
        except SquidMissing as exc:
            return contract.TargetStatus(
                "squid", details["binary"], False, "SquidNotFound", str(exc), details
            )
        except subprocess.TimeoutExpired:
            return contract.TargetStatus(
                "squid", details["binary"], False, contract.REASON_TIMEOUT, "squid -v timed out", details
            )
        except OSError as exc:
            return contract.TargetStatus(
                "squid", details["binary"], False, "SquidNotRunnable", str(exc), details
            )
        first = (out.stdout or "").splitlines()[:1]
        if out.returncode != 0 or not first:
            return contract.TargetStatus(
                "squid", binary, False, "SquidNotRunnable", "squid -v exited %d" % out.returncode, details
            )
        details["version"] = first[0].replace("Squid Cache: Version", "").strip()
        return contract.TargetStatus("squid", binary, True, contract.REASON_REACHABLE, first[0], details)

    def _check_state_dir(self) -> contract.TargetStatus:
        path = self.config.state_dir
        details = {"path": path}
        probe = path
        while probe and not os.path.exists(probe):
            probe = os.path.dirname(probe)
        if not os.path.isdir(probe):
            return contract.TargetStatus(
                "stateDir", path, False, "StateDirUnusable", "%s is not a directory" % probe, details
            )
        if not os.access(probe, os.W_OK | os.X_OK):
            return contract.TargetStatus(
                "stateDir", path, False, "StateDirUnusable", "%s is not writable" % probe, details
            )
        if state_dir_refusal(path):
            return contract.TargetStatus(
                "stateDir", path, False, "StateDirUnusable", state_dir_refusal(path), details
            )
        try:
            details["instances"] = len(self.store.names())
            usage = shutil.disk_usage(probe)
            details["freeBytes"] = usage.free
        except (StoreError, OSError) as exc:
            return contract.TargetStatus("stateDir", path, False, "StateDirUnusable", str(exc), details)
        return contract.TargetStatus("stateDir", path, True, contract.REASON_REACHABLE, "writable", details)
