# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The libvirt provider (types ``kvm`` and ``kvm2``): the contract methods and the Checker.

Contract profile (the reference's kvm2, with its gaps closed): create blocks until the domain
is started (the first use of an image on a host includes its download); delete waits until the
domain and its volumes are gone; the IP is discovered (guest agent, DHCP lease, ARP); marks are
written metadata in the type's own namespace, plus a marks volume per instance; CreatedAt is
written at create; list fails whole when a host cannot be listed; QuotaExceeded from a pool
space and host memory precheck; NotFound only for a domain that is gone. Every error is built
with ``errors.wrap`` and the configured provider name. The per-name lock serialises create and
delete of one name inside a module run (a batch runs items in threads). Authentication is
delivered in the NoCloud seed's user-data (create.py, cloud_init_auth) and fixed at creation:
``sync_auth`` compares with the password file line kept in the domain's marks.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import posixpath
import threading

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.error_seam import ErrorSeam
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import ownership
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    bases,
    check,
    create,
    domain_type,
    ids,
    image,
    inspect,
    libvirt_backend,
    listing,
    remove,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.classify import (
    Permanent,
    classify,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.guard import (
    Budgets,
    GuardedConnection,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.hosts import HostTable

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")


def _fixed_fields(marks) -> dict:
    """``{"port": n}`` from a domain's marks; ``{}`` for one made before the port was recorded."""
    return {"port": marks.port} if marks is not None and marks.port else {}


class LibvirtProvider(contract.Provider, contract.Checker, ErrorSeam):
    supports_auth = True  # the collection's cloud-init part in the seed's user-data (cloud_init_auth)
    _parse_id = staticmethod(ids.parse_id)  # ErrorSeam's hook: (host name, domain name)

    def __init__(self, type_name: str, name: str, installation: str, block, dialer=None, budgets=None):
        super().__init__(name, installation)
        self.type_name = type_name
        self.config = block
        self.budgets = budgets or Budgets()
        if dialer is None:
            dialer = libvirt_backend.LibvirtDialer(block)
        self.dialer = dialer
        self.hosts = HostTable(dialer, self.budgets, name)
        self.check_dials = 0
        self._kvm_problems = {}  # host name -> why its KVM cannot run guests ("" = it can), per process
        self._locks = {}
        self._locks_guard = threading.Lock()
        self._holders = {}  # lock key -> what holds it, for the message of a wait that runs out
        self._seen = contract.SeenFields()  # the fixed fields the last get of each id read
        if block.insecure_ignore_host_key:
            log.warning(
                "provider=%s insecureIgnoreHostKey is set: SSH host keys are not verified, a man in "
                "the middle can impersonate the hypervisors",
                name,
            )

    # -- helpers -------------------------------------------------------------------------

    @property
    def dial_count(self) -> int:
        """SSH dials made for operations (the pool) in this process; the check's are separate."""
        return self.hosts.dials

    def _fail(
        self, op: str, provider_id: str, exc: BaseException, guest_type: str = ""
    ) -> errors.ProviderError:
        """ErrorSeam's hook. ``guest_type``: the host's domain type, whose fix a guest that could
        not start is told (domain_type.with_hint)."""
        if isinstance(exc, create.CredentialsFixed):
            return errors.credentials_fixed(op, self.name, provider_id, exc)
        if guest_type:
            exc = domain_type.with_hint(exc, guest_type)
        return errors.wrap(classify(op, exc), op, self.name, provider_id, exc)

    def _refuse_kvm_that_cannot_run(self, conn, host, provider_id: str) -> None:
        """A ``kvm`` host whose KVM cannot run ordinary guests (domain_type.py) gets no new guest:
        it would start as libvirt sees it and never come up, so the create fails Transient with
        the fix. Asked once per host and process (a batch on one host pays two small calls)."""
        if host.domain_type != "kvm":
            return
        if host.name not in self._kvm_problems:
            self._kvm_problems[host.name] = domain_type.capability_problem(conn, "kvm")
        problem = self._kvm_problems[host.name]
        if problem:
            message = "%s; %s" % (problem, domain_type.FIX_HINT)
            raise errors.transient("create", self.name, provider_id, message)

    def _lock(self, key: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    @contextlib.contextmanager
    def locked(self, key: str, deadline, op: str = ""):
        """An in-process lock per key (an instance, or a host's image), waited for within the
        deadline; a wait that runs out names the lock and what holds it (issue 28 §7)."""
        lock = self._lock(key)
        if not lock.acquire(timeout=deadline.budget(3600.0)):
            held = "held in this process by %s" % (
                self._holders.get(key) or "an operation that has since let go"
            )
            try:
                deadline.check("wait for %s" % key)
            except DeadlineExceeded as exc:
                raise DeadlineExceeded("lock %s: %s (%s)" % (key, exc, held)) from None
            raise DeadlineExceeded("lock %s: timed out waiting for another operation (%s)" % (key, held))
        self._holders[key] = "%s (thread %s, since %s)" % (
            op or "an operation",
            threading.current_thread().name,
            datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        )
        try:
            yield
        finally:
            self._holders.pop(key, None)
            lock.release()

    def _host(self, op: str, provider_id: str, host_name: str):
        """The configured host of an id; HostNotConfigured (Permanent) otherwise, naming the host
        and the configured ones: nothing can reach its domain."""
        host = self.config.host(host_name)
        if host is None:
            log.warning(
                "provider=%s op=%s %s: host %r is not in the config", self.name, op, provider_id, host_name
            )
            raise errors.host_not_configured(
                op,
                self.name,
                provider_id,
                "host %r is not in this provider's hosts (configured: %s): its domain cannot be reached; "
                "put the host back in the config to read it, or to collect it with proxy_gc"
                % (host_name, ", ".join(h.name for h in self.config.hosts)),
            )
        return host

    # -- contract ------------------------------------------------------------------------

    def id_for(self, name, placement, namespace=""):
        """``hosts/<zone>/domains/<name>`` (the only host when zone is empty); namespace is unused."""
        if not names.is_dns_label(name):
            return None
        if placement.zone and self.config.host(placement.zone) is not None:
            return ids.format_id(placement.zone, name)
        if not placement.zone and len(self.config.hosts) == 1:
            return ids.format_id(self.config.hosts[0].name, name)
        return None

    def name_in_id(self, provider_id):
        return ids.parse_id(provider_id)[1]

    def check_request(self, req):
        try:
            create.plan(self.config, req)
        except Permanent as exc:
            return str(exc)
        return ""

    def create(self, req: contract.CreateRequest, deadline) -> str:
        if not names.is_dns_label(req.name):
            raise errors.permanent("create", self.name, req.name, "name %r is not a DNS label" % req.name)
        if not req.uid:
            raise errors.permanent("create", self.name, req.name, "uid is required (it is the GC mark)")
        with self.operation("create", req.name, parse=False):  # no host yet: the error names the name
            plan = create.plan(self.config, req)
        provider_id = ids.format_id(plan.host.name, req.name)
        log.debug("provider=%s op=create host=%s request=%s", self.name, plan.host.name, req.describe())
        try:
            with (
                self.operation("create", provider_id, parse=False, guest_type=plan.host.domain_type),
                self.locked(provider_id, deadline, "create of %s" % provider_id),
            ):
                conn = self.hosts.get(plan.host, deadline)
                try:
                    conn.domain_state(req.name)
                    exists = True
                except backend.LibvirtCallError as exc:
                    if exc.code != backend.ERR_NO_DOMAIN:
                        raise
                    exists = False
                self._seen.forget(provider_id)
                if exists:
                    create.adopt(conn, self.type_name, req, deadline, self.name)
                    outcome = "adopted"
                else:
                    self._refuse_kvm_that_cannot_run(conn, plan.host, provider_id)
                    create.build(self, conn, plan, req, deadline)
                    outcome = "created"
        except errors.ProviderError as err:
            log.info(
                "provider=%s op=create host=%s name=%s failed class=%s: %s",
                self.name,
                plan.host.name,
                req.name,
                err.error_class,
                err.__cause__ or err,  # what the body raised (the seam chains it)
            )
            raise
        log.info(
            "provider=%s op=create host=%s name=%s domain ensured running (%s)",
            self.name,
            plan.host.name,
            req.name,
            outcome,
        )
        return provider_id

    def get(self, provider_id: str, deadline) -> contract.Instance:
        with self.operation("get", provider_id) as (host_name, name):
            host = self._host("get", provider_id, host_name)
            conn = self.hosts.get(host, deadline)
            marks = inspect.read_marks(conn, name, self.type_name)
            other = ownership.other_provider("domain %s" % name, marks.provider if marks else "", self.name)
            if other:  # not this provider's: it has no domain of that name (as local answers)
                raise errors.not_found("get", self.name, provider_id, other)
            found = inspect.instance(conn, host.name, name, marks, deadline)
        self._seen.keep(provider_id, _fixed_fields(marks))
        log.info("provider=%s op=get host=%s name=%s state=%s", self.name, host.name, name, found.state)
        log.debug("provider=%s op=get host=%s name=%s ip=%s", self.name, host.name, name, found.ip)
        return found

    def fixed_fields(self, provider_id: str, deadline) -> dict:
        """The port recorded in the domain's marks, from the last ``get``'s read (else read again)."""
        return self._seen.take(provider_id, lambda: self._read_fixed_fields(provider_id, deadline))

    def _read_fixed_fields(self, provider_id: str, deadline) -> dict:
        with self.operation("fixed_fields", provider_id) as (host_name, name):
            host = self._host("fixed_fields", provider_id, host_name)
            return _fixed_fields(inspect.read_marks(self.hosts.get(host, deadline), name, self.type_name))

    def delete(self, provider_id: str, deadline) -> None:
        """Done for an id whose host left the config (the blueprint's SHOULD): nothing configured
        can reach it, and deletion of its Proxy must be able to finish (issue 14). Its domain is
        not touched: with the host back, proxy_gc collects it, since its owner is gone."""
        with self.operation("delete", provider_id) as (host_name, name):
            host = self.config.host(host_name)
            if host is None:
                log.warning(
                    "provider=%s op=delete %s: host %r is not in the config; its domain was not reached "
                    "(proxy_gc collects it if the host comes back)",
                    self.name,
                    provider_id,
                    host_name,
                )
                return
            self._seen.forget(provider_id)
            with self.locked(provider_id, deadline, "delete of %s" % provider_id):
                conn = self.hosts.get(host, deadline)
                had_domain = remove.remove_domain(
                    conn, host.pool, name, self.type_name, self.installation, self.name
                )
                backing = bases.backing_of(conn, host.pool, ids.overlay_volume(name, self.type_name))
                volumes = remove.remove_volumes(conn, host.pool, name, self.type_name)
                remove.verify_gone(conn, host.pool, name, self.type_name)
        if backing:
            self._collect_base(conn, host, backing, deadline)
        log.info(
            "provider=%s op=delete host=%s name=%s domain deleted (domain=%s volumes=%d)",
            self.name,
            host.name,
            name,
            had_domain,
            len(volumes),
        )

    def _collect_base(self, conn, host, backing: str, deadline) -> None:
        """The instance is gone; its base goes too when nothing else backs onto it and no image
        of the catalogue names it any more (a catalogue image's base is a cache: kept, like one
        the libvirt_host role seeded). A failure keeps the base (never unsafe) and is only
        logged: the delete itself succeeded."""
        base = posixpath.basename(backing)
        if base in {image.resolve(self.config, key).volume for key in self.config.images}:
            return
        try:
            with self.locked(create.base_lock(host.name, base), deadline, "collection of base %s" % base):
                bases.collect(conn, host.pool, backing)
        except Exception as exc:
            log.warning(
                "provider=%s op=delete host=%s base %s not collected (kept): %s",
                self.name,
                host.name,
                base,
                exc,
            )

    def sync_auth(self, provider_id: str, auth, deadline, apply: bool = True) -> bool:
        """A domain's credentials are fixed at creation (its seed's user-data holds their hash,
        its marks the same line): the same credentials are ``False``; others, or a domain made
        without auth, are Permanent saying it must be replaced (check mode too: applying would
        fail the same way)."""
        with self.operation("sync_auth", provider_id) as (host_name, name):
            host = self._host("sync_auth", provider_id, host_name)
            conn = self.hosts.get(host, deadline)
            marks = inspect.read_marks(conn, name, self.type_name)
        if marks is None or not marks.managed:
            raise errors.permanent(
                "sync_auth",
                self.name,
                provider_id,
                "domain %s has no marks of type %s" % (name, self.type_name),
            )
        if auth is not None and marks.passwd and auth.matches(marks.passwd):
            return False
        raise self._fail(
            "sync_auth", provider_id, create.CredentialsFixed(create.fixed_credentials(marks.passwd))
        )

    def list_by_tag(self, deadline) -> list:
        out = []
        with self.operation("list", parse=False):
            for host in self.config.hosts:
                conn = self.hosts.get(host, deadline)
                out.extend(
                    listing.host_instances(conn, host, self.type_name, self.installation, deadline, self.name)
                )
        log.info(
            "provider=%s op=list domains listed count=%d hosts=%d",
            self.name,
            len(out),
            len(self.config.hosts),
        )
        return out

    def check(self, deadline) -> list:
        def dial(host, dl):
            self.check_dials += 1
            conn = self.hosts.dial(host, dl)
            return GuardedConnection(conn, host.name, self.budgets, dl, lambda _c: None)

        results = check.check_all(dial, list(self.config.hosts), deadline, self.type_name)
        for status in results:
            log.info(
                "provider=%s op=check host=%s ready=%s reason=%s",
                self.name,
                status.target,
                status.ready,
                status.reason,
            )
        return results

    def close(self) -> None:
        self.hosts.close()
