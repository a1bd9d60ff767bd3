# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Create: from a validated request to a started domain, resumable after any partial step.

Order, and why:
1. ``plan`` validates host, machine type and image before any dial (Permanent otherwise).
2. An existing domain is adopted only when it carries this type's marks with our UID (an empty
   UID is adopted; another UID, or no marks of this type, is Permanent), then made to run,
   including a paused or pmsuspended one.
3. Otherwise, before anything is written: the pool must be running and hold the image (when
   not cached), the disk and the seed; the host must have the guest's memory. QuotaExceeded
   when short, so nothing is left half-made.
4. The marks volume first (so every later volume is findable by GC), the image (its base
   volume named by content, image.py), the overlay (always new; then the base and its marker
   are checked again, bases.py), the seed (always rebuilt: a cut-off
   upload must not be trusted), then DomainDefineXML with the marks element, then start.
Create returns once the domain is started; readiness (an address) comes from Get.

With ``auth`` the seed's user-data is the request's cloud-init with the collection's part beside
it (cloud_init_auth: the password's hash, never the password), and the marks element keeps the
same password file line, so the credentials a domain was made with are known (``sync_auth``,
``adopt``). The domain XML is logged with that line redacted.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import cloud_init_auth, ownership
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    bases,
    ids,
    image,
    inspect,
    metadata,
    seed,
    volumes,
    xmlbuild,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.classify import (
    Permanent,
    Quota,
    Transient,
)

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")

MIB = 1024**2
GIB = 1024**3
# Room for the seed, the marks and filesystem overhead, on top of the image and the disk.
SPACE_MARGIN = 16 * MIB
START_WAIT_SECONDS = 30.0
POLL_SECONDS = 0.25


@dataclasses.dataclass(frozen=True)
class Plan:
    host: object  # config.HostSpec
    machine: object  # config.MachineTypeSpec
    image: image.Image


def plan(config, req: contract.CreateRequest) -> Plan:
    """Everything decidable without the backend; ``Permanent`` names the field to fix."""
    zone = req.placement.zone
    if zone:
        host = config.host(zone)
        if host is None:
            known = ", ".join(h.name for h in config.hosts)
            raise Permanent("placement.zone %r is not a configured host (%s)" % (zone, known))
    elif len(config.hosts) == 1:
        host = config.hosts[0]
    else:
        raise Permanent(
            "placement.zone is required with more than one host: one of the configured host names"
        )
    if not req.placement.machine_type:
        raise Permanent(
            "placement.machine_type is required: one of %s" % ", ".join(sorted(config.machine_types))
        )
    machine = config.machine_types.get(req.placement.machine_type)
    if machine is None:
        raise Permanent(
            "placement.machine_type %r is not configured (%s)"
            % (req.placement.machine_type, ", ".join(sorted(config.machine_types)))
        )
    if req.auth is not None and cloud_init_auth.problem(req.cloud_init):
        raise Permanent(cloud_init_auth.problem(req.cloud_init))
    return Plan(host=host, machine=machine, image=image.resolve(config, req.placement.image))


def adopt(conn, type_name: str, req: contract.CreateRequest, deadline, provider: str = "") -> None:
    """The domain exists: check it is ours (this type's, this uid's, and made by ``provider``
    or by no recorded provider) and make it run."""
    marks = inspect.read_marks(conn, req.name, type_name)
    if marks is None or not marks.managed:
        raise Permanent(
            "a domain named %s exists on the host without this provider type's (%s) marks: "
            "it is not ours to adopt" % (req.name, type_name)
        )
    if marks.uid != req.uid:  # an empty UID too: create writes it with the domain, so not ours
        raise Permanent("domain %s belongs to uid %r, not %s" % (req.name, marks.uid, req.uid))
    other = ownership.other_provider("domain %s" % req.name, marks.provider, provider)
    if other:
        raise Permanent(other)
    if req.auth is not None and not (marks.passwd and req.auth.matches(marks.passwd)):
        raise CredentialsFixed(fixed_credentials(marks.passwd))  # never started with other credentials
    ensure_running(conn, req.name, deadline)


class CredentialsFixed(Permanent):
    """The domain has other credentials than asked for (or none): only a new domain can change them."""


def fixed_credentials(passwd: str) -> str:
    """Why other credentials cannot be given to an existing domain (``passwd``: the ones it has)."""
    what = "other credentials" if passwd else "no authentication"
    return (
        "the domain was created with %s, and a libvirt domain's credentials are fixed at creation "
        "(its seed's user-data): replace the instance (state: absent, then present) to change them" % what
    )


def user_data(req: contract.CreateRequest) -> tuple:
    """The seed's user-data and the password file line it gives the guest (``""``: no auth)."""
    if req.auth is None:
        return req.cloud_init, ""
    passwd = req.auth.passwd_line()
    return cloud_init_auth.with_auth(req.cloud_init, passwd), passwd


def ensure_running(conn, name: str, deadline) -> None:
    state = conn.domain_state(name)
    if state == backend.DOMAIN_PAUSED:
        conn.domain_resume(name)
    elif state == backend.DOMAIN_PMSUSPENDED:
        conn.domain_wakeup(name)
    elif state == backend.DOMAIN_CRASHED:
        _ignore(conn.domain_destroy, name, backend.ERR_OPERATION_INVALID)
        _ignore(conn.domain_start, name, backend.ERR_OPERATION_INVALID)
    elif state not in (backend.DOMAIN_RUNNING, backend.DOMAIN_BLOCKED):
        _ignore(conn.domain_start, name, backend.ERR_OPERATION_INVALID)  # already running
    end = time.monotonic() + deadline.budget(START_WAIT_SECONDS)
    while True:
        state = conn.domain_state(name)
        if state in (backend.DOMAIN_RUNNING, backend.DOMAIN_BLOCKED):
            return
        if time.monotonic() >= end:
            raise Transient("domain %s did not start: state %d" % (name, state))
        deadline.sleep(POLL_SECONDS)


def _ignore(func, name: str, *codes):
    try:
        func(name)
    except backend.LibvirtCallError as exc:
        if exc.code not in codes:
            raise


def precheck(conn, host, config, machine, image_bytes: int) -> None:
    pool = conn.pool_info(host.pool)
    if pool.state != backend.POOL_RUNNING:
        raise Permanent(
            "pool %s on host %s is %s, not running"
            % (host.pool, host.name, backend.POOL_STATES.get(pool.state, pool.state))
        )
    needed = image_bytes + config.disk_size_gb * GIB + SPACE_MARGIN
    if pool.available < needed:
        raise Quota(
            "pool %s on host %s has %.2f GiB free, this instance needs %.2f GiB"
            % (host.pool, host.name, pool.available / GIB, needed / GIB)
        )
    memory = conn.available_memory()
    if memory < machine.memory_mib * MIB:
        raise Quota(
            "host %s has %d MiB of memory available, this instance needs %d MiB"
            % (host.name, memory // MIB, machine.memory_mib)
        )


def build(provider, conn, p: Plan, req: contract.CreateRequest, deadline) -> None:
    """The domain does not exist: make everything, in the order the module docstring gives."""
    config, type_name, pool = provider.config, provider.type_name, p.host.pool
    # One download per host and base inside a run (a batch creates many instances at once);
    # the overlay is made under the same lock, so a delete in this run cannot collect the base
    # in between.
    overlay = ids.overlay_volume(req.name, type_name)
    with provider.locked(base_lock(p.host.name, p.image.volume), deadline, "create of %s" % req.name):
        cached = image.is_cached(conn, pool, p.image)
        if not cached:
            image.check_unused(conn, pool, p.image)
        response, length = (None, 0) if cached else image.open_download(p.image, provider.budgets.http)
        try:
            precheck(conn, p.host, config, p.machine, length)
            created_at = metadata.now()
            volumes.write(
                conn,
                pool,
                ids.marks_volume(req.name, type_name),
                metadata.volume_json(
                    type_name, req.name, req.uid, created_at, provider.installation, provider.name
                ),
            )
            if response is not None:
                image.fill(conn, pool, p.image, response, length, deadline, provider.budgets)
        finally:
            if response is not None:
                image.close_download(response)
        base_path = conn.volume_path(pool, p.image.volume)
        fresh_overlay(conn, pool, overlay, config.disk_size_gb, base_path, p.image.format)
        if not bases.still_cached(conn, pool, p.image.volume, p.image.marker):
            conn.volume_delete(pool, overlay)
            raise Transient(
                "base volume %s was collected by another run while this create used it: retry"
                % p.image.volume
            )
    seed_name = ids.seed_volume(req.name, type_name)
    vendor = seed.vendor_data(config.vendor_data, config.install_guest_agent)
    data, passwd = user_data(req)
    volumes.write(conn, pool, seed_name, seed.build(req.name, data, vendor))
    fields = dict(
        type_name=type_name,
        name=req.name,
        domain_type=p.host.domain_type,
        vcpus=p.machine.vcpus,
        memory_mib=p.machine.memory_mib,
        firmware=p.image.firmware,
        overlay_path=conn.volume_path(pool, overlay),
        seed_path=conn.volume_path(pool, seed_name),
        bridge=p.host.bridge,
        uid=req.uid,
        created_at=created_at,
        installation=provider.installation,
        provider=provider.name,
        port=int(req.port),
    )
    log.debug(
        "provider=%s libvirt domain xml host=%s name=%s xml=%s",
        provider.name,
        p.host.name,
        req.name,
        xmlbuild.domain_xml(**fields, passwd="<redacted>" if passwd else ""),
    )
    conn.domain_define(xmlbuild.domain_xml(**fields, passwd=passwd))
    ensure_running(conn, req.name, deadline)


def base_lock(host: str, volume: str) -> str:
    """The in-process lock key of one base on one host (create and the collection in delete)."""
    return "base %s %s" % (host, volume)


def fresh_overlay(conn, pool: str, overlay: str, size_gb: int, base_path: str, base_format: str) -> None:
    """A new, empty overlay. Build runs only when the domain does not exist, so an overlay found
    here is a leftover (a partial delete, a create that died): its disk has run cloud-init with
    someone's old user-data, perhaps on another base, and is never reused, however well its
    path and size match."""
    try:
        conn.volume_delete(pool, overlay)
        log.info("libvirt overlay %s left without its domain: recreated", overlay)
    except backend.LibvirtCallError as exc:
        if exc.code != backend.ERR_NO_STORAGE_VOL:
            raise
    conn.volume_create(pool, xmlbuild.overlay_volume_xml(overlay, size_gb, base_path, base_format))
