# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The health check: every host at once, each on a fresh connection closed afterwards.

It never touches the pooled connections that operations use, so a check that runs out of time
cannot disturb a create in flight. Per host: credentials readable, dial (SSH + libvirt), library
version, hostname, the pool (exists, running, capacity, free space), free memory, and whether
the host can run guests of its ``domainType`` (domain_type.py). ``details`` holds every fact
gathered before the first failure. Reasons: the shared ones, plus ``CredentialsUnavailable``
(key or known_hosts unreadable), ``PoolNotFound``, ``PoolNotActive``,
``DomainTypeUnsupported`` (libvirt's domain capabilities rule the type out) and
``GuestsFailing`` (guests of ours failed to start or stopped on an emulation failure).
"""

from __future__ import annotations

import threading

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import (
    Deadline,
    DeadlineExceeded,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
    CredentialsUnavailable,
    CredentialsUnsafe,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    domain_type,
    guard,
    metadata,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.classify import (
    is_ssh_auth_failure,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.libvirt_backend import (
    LibraryMissing,
)

REASON_CREDENTIALS_UNAVAILABLE = "CredentialsUnavailable"
REASON_POOL_NOT_FOUND = "PoolNotFound"
REASON_POOL_NOT_ACTIVE = "PoolNotActive"
REASON_LIBRARY_MISSING = "LibraryMissing"
GIB = 1024**3
MIB = 1024**2


def reason_for(exc: BaseException) -> str:
    if isinstance(exc, CredentialsUnavailable | CredentialsUnsafe):
        return REASON_CREDENTIALS_UNAVAILABLE
    if isinstance(exc, LibraryMissing):
        return REASON_LIBRARY_MISSING
    if isinstance(exc, DeadlineExceeded):
        return contract.REASON_TIMEOUT
    if isinstance(exc, backend.LibvirtCallError):
        if is_ssh_auth_failure(exc):
            return contract.REASON_UNAUTHORIZED
        if exc.code == backend.ERR_ACCESS_DENIED:
            return contract.REASON_FORBIDDEN
        if exc.code == backend.ERR_NO_STORAGE_POOL:
            return REASON_POOL_NOT_FOUND
        if exc.code in (backend.ERR_SYSTEM_ERROR, backend.ERR_RPC):
            return contract.REASON_UNREACHABLE
        return contract.REASON_API_ERROR
    return contract.REASON_UNREACHABLE


def check_host(dial, host, deadline, type_name: str = "kvm") -> contract.TargetStatus:
    """``dial(host, deadline)`` returns a fresh guarded connection; it is closed here."""
    target, where = host.name, "%s@%s" % (host.user, host.address)
    details = {"user": host.user, "pool": host.pool, "domainType": host.domain_type}
    conn = None
    try:
        conn = dial(host, deadline)
        details["libvirtVersion"] = _version(conn.lib_version())
        details["hostname"] = conn.hostname()
        pool = conn.pool_info(host.pool)
        details["poolState"] = backend.POOL_STATES.get(pool.state, str(pool.state))
        details["poolCapacityGiB"] = round(pool.capacity / GIB, 2)
        details["poolAvailableGiB"] = round(pool.available / GIB, 2)
        if pool.state != backend.POOL_RUNNING:
            return contract.TargetStatus(
                target,
                where,
                False,
                REASON_POOL_NOT_ACTIVE,
                "pool %s is %s" % (host.pool, details["poolState"]),
                details,
            )
        details["memoryAvailableMiB"] = conn.available_memory() // MIB
        problem = domain_type.capability_problem(conn, host.domain_type)
        if problem:
            return contract.TargetStatus(
                target,
                where,
                False,
                domain_type.REASON_DOMAIN_TYPE_UNSUPPORTED,
                "%s; %s" % (problem, domain_type.FIX_HINT),
                details,
            )
        failing = domain_type.failing_guests(conn, metadata.namespace(type_name))
        if failing:
            details["failingGuests"] = failing
            return contract.TargetStatus(
                target,
                where,
                False,
                domain_type.REASON_GUESTS_FAILING,
                domain_type.failing_message(failing, host.domain_type),
                details,
            )
    except Exception as exc:
        return contract.TargetStatus(target, where, False, reason_for(exc), str(exc), details)
    finally:
        if conn is not None:
            try:
                guard.run(conn.raw.close, (), 5.0, Deadline.none(), "close check connection")
            except Exception:
                pass
    return contract.TargetStatus(
        target, where, True, contract.REASON_REACHABLE, "pool %s is running" % host.pool, details
    )


def _version(number: int) -> str:
    return "%d.%d.%d" % (number // 1000000, (number // 1000) % 1000, number % 1000)


def check_all(dial, hosts, deadline, type_name: str = "kvm") -> list:
    """One entry per host, in config order, all hosts checked concurrently."""
    results = [None] * len(hosts)

    def one(index, host):
        results[index] = check_host(dial, host, deadline, type_name)

    threads = [threading.Thread(target=one, args=(i, h), daemon=True) for i, h in enumerate(hosts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(deadline.budget(300.0))
    for index, host in enumerate(hosts):
        if results[index] is None:
            results[index] = contract.TargetStatus(
                host.name,
                "%s@%s" % (host.user, host.address),
                False,
                contract.REASON_TIMEOUT,
                "check did not finish",
                {},
            )
    return results
