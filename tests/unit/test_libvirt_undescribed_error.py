"""A domain lookup that libvirt fails without describing why (no error set: the generic
"virDomainLookupByName() failed", seen once in CI during a create over ssh) is asked once more;
a described failure ("no such domain") is reported at once, unasked again."""

from __future__ import annotations

import libvirt
import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    libvirt_backend,
)


class Domain:
    def state(self, _flags):
        return [1, 1]


class Conn:
    """Fails the first ``failures`` lookups with ``error``, then finds the domain."""

    def __init__(self, failures: int, error):
        self.failures, self.error, self.lookups = failures, error, 0

    def lookupByName(self, _name):  # noqa: N802 (libvirt's name)
        self.lookups += 1
        if self.lookups <= self.failures:
            raise self.error()
        return Domain()


def undescribed():
    return libvirt.libvirtError("virDomainLookupByName() failed")  # no error set in this thread


def no_such_domain():
    exc = libvirt.libvirtError("Domain not found")
    exc.err = (backend.ERR_NO_DOMAIN, 10, "Domain not found", 2, None, None, None, 0, 0)
    return exc


def test_an_undescribed_lookup_failure_is_asked_once_more():
    conn = Conn(1, undescribed)
    assert libvirt_backend.LibvirtConnection(conn).domain_state("proxy-a") == 1
    assert conn.lookups == 2


def test_two_undescribed_failures_are_reported():
    conn = Conn(2, undescribed)
    with pytest.raises(backend.LibvirtCallError):
        libvirt_backend.LibvirtConnection(conn).domain_state("proxy-a")
    assert conn.lookups == 2


def test_no_such_domain_is_reported_at_once():
    conn = Conn(1, no_such_domain)
    with pytest.raises(backend.LibvirtCallError) as caught:
        libvirt_backend.LibvirtConnection(conn).domain_state("proxy-a")
    assert caught.value.code == backend.ERR_NO_DOMAIN and conn.lookups == 1


class Volume:
    def path(self):
        return "/pools/default/proxy-a.kvm2.qcow2"


class Pool:
    """A storage pool whose first ``failures`` volume lookups fail with ``error``."""

    def __init__(self, failures: int, error):
        self.failures, self.error, self.lookups = failures, error, 0

    def storageVolLookupByName(self, _name):  # noqa: N802 (libvirt's name)
        self.lookups += 1
        if self.lookups <= self.failures:
            raise self.error()
        return Volume()


class PoolConn:
    def __init__(self, pool):
        self.pool = pool

    def storagePoolLookupByName(self, _name):  # noqa: N802 (libvirt's name)
        return self.pool


def undescribed_volume():
    return libvirt.libvirtError("virStorageVolLookupByName() failed")  # seen in a batch of 20 creates


def no_storage_vol():
    exc = libvirt.libvirtError("Storage volume not found")
    exc.err = (backend.ERR_NO_STORAGE_VOL, 18, "Storage volume not found", 2, None, None, None, 0, 0)
    return exc


def test_an_undescribed_volume_lookup_failure_is_asked_once_more():
    pool = Pool(1, undescribed_volume)
    path = libvirt_backend.LibvirtConnection(PoolConn(pool)).volume_path("default", "proxy-a.kvm2.qcow2")
    assert path == "/pools/default/proxy-a.kvm2.qcow2" and pool.lookups == 2


def test_no_storage_vol_is_reported_at_once():
    pool = Pool(1, no_storage_vol)
    with pytest.raises(backend.LibvirtCallError) as caught:
        libvirt_backend.LibvirtConnection(PoolConn(pool)).volume_path("default", "proxy-a.kvm2.qcow2")
    assert caught.value.code == backend.ERR_NO_STORAGE_VOL and pool.lookups == 1
