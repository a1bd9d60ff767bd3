# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The production side of the seam: ``Connection`` over libvirt-python, and the SSH dialer.

libvirt-python is imported behind a guard so the collection imports without it; a provider
that needs it then fails with a clear Permanent error at use. The transport is libvirt's own
libssh2 client (``qemu+libssh2://``): it takes the private key and the known_hosts file as URI
parameters and reads both on every connect, so a rotated key needs no restart, and it never
prompts (no auth callback is given, so an unknown host key fails instead of asking).

Not ``qemu+libssh://``, which takes the same parameters: libvirt's libssh client can leave the
rest of a reply in libssh's buffer and then wait on the drained socket, so some replies (a
listing of 150 domains, domain capabilities) never return (docs/libvirt-provider.md,
"Connections"). A libvirt built without libssh2 (RHEL's) falls back to libssh, with a warning.
"""

from __future__ import annotations

import logging
import urllib.parse

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
    require_readable,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    dial_errors,
)

try:
    import libvirt

    LIBVIRT_IMPORT_ERROR = None
    # libvirt prints every error to stderr by default; errors reach us as exceptions anyway.
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
except ImportError as _exc:  # pragma: no cover - depends on the host
    libvirt = None
    LIBVIRT_IMPORT_ERROR = str(_exc)

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")

TRANSPORT = "libssh2"
FALLBACK_TRANSPORT = "libssh"
# What libvirt says when it was built without a transport (virNetSocketNewConnectLibSSH2).
_NOT_BUILT_IN = "transport support was not enabled"


class LibraryMissing(Exception):
    """libvirt-python is not installed where the module runs (Permanent: install it)."""


def _translate(exc):
    """libvirt's exception -> the seam's, keeping the cause."""
    err = backend.LibvirtCallError(exc.get_error_code() or 0, str(exc), exc.get_error_domain() or 0)
    err.__cause__ = exc
    return err


def _calls(func):
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except libvirt.libvirtError as exc:
            raise _translate(exc) from exc

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


class _Upload:
    def __init__(self, stream):
        self._stream = stream

    @_calls
    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            sent = self._stream.send(bytes(view))
            if sent < 0:
                raise backend.LibvirtCallError(backend.ERR_RPC, "stream send failed")
            view = view[sent:]

    @_calls
    def finish(self) -> None:
        self._stream.finish()

    def abort(self) -> None:
        try:
            self._stream.abort()
        except libvirt.libvirtError:
            pass


def _read_twice_if_undescribed(lookup, what: str, name: str):
    """``lookup(name)``, asked once more when libvirt answered failure without saying why (no
    error set: seen in CI for a domain lookup over ssh during a create, and for a volume lookup
    in a batch of 20 creates on one host). A lookup only reads, so asking again is safe; a
    described error, "no such domain" or "no storage vol" included, is reported at once."""
    try:
        return lookup(name)
    except libvirt.libvirtError as exc:
        if exc.get_error_code():
            raise
        log.debug("lookup of %s %s failed without an error; asking once more", what, name)
        return lookup(name)


class LibvirtConnection:
    """``backend.Connection`` over one ``virConnect``."""

    def __init__(self, conn, transport: str = TRANSPORT):
        self._conn = conn
        self.transport = transport

    def close(self) -> None:
        try:
            self._conn.close()
        except libvirt.libvirtError:
            pass

    def is_alive(self) -> bool:
        try:
            return bool(self._conn.isAlive())
        except libvirt.libvirtError:
            return False

    def _domain(self, name):
        return _read_twice_if_undescribed(self._conn.lookupByName, "domain", name)

    def _pool(self, pool):
        return _read_twice_if_undescribed(self._conn.storagePoolLookupByName, "storage pool", pool)

    def _volume(self, pool, name):
        return _read_twice_if_undescribed(self._pool(pool).storageVolLookupByName, "volume", name)

    @_calls
    def lib_version(self) -> int:
        return int(self._conn.getLibVersion())

    @_calls
    def hostname(self) -> str:
        return self._conn.getHostname()

    @_calls
    def available_memory(self) -> int:
        stats = self._conn.getMemoryStats(libvirt.VIR_NODE_MEMORY_STATS_ALL_CELLS, 0)
        kib = sum(int(stats.get(key, 0)) for key in ("free", "buffers", "cached"))
        return kib * 1024

    @_calls
    def domain_names(self) -> list:
        return [dom.name() for dom in self._conn.listAllDomains(0)]

    @_calls
    def domain_state(self, name: str) -> int:
        return int(self._domain(name).state(0)[0])

    @_calls
    def domain_state_reason(self, name: str) -> tuple:
        state, reason = self._domain(name).state(0)[:2]
        return int(state), int(reason)

    @_calls
    def max_vcpus(self, virt_type: str) -> int:
        return int(self._conn.getMaxVcpus(virt_type))

    @_calls
    def capabilities(self) -> str:
        """``""`` over the libssh fallback: the 11 KB reply can stall that transport for the whole
        call budget (see "Connections" in docs/libvirt-provider.md); "" says nothing either way."""
        if self.transport == FALLBACK_TRANSPORT:
            return ""
        return self._conn.getCapabilities()

    @_calls
    def domain_metadata(self, name: str, uri: str) -> str:
        return self._domain(name).metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, uri, 0)

    @_calls
    def domain_define(self, xml: str) -> None:
        self._conn.defineXML(xml)

    @_calls
    def domain_start(self, name: str) -> None:
        self._domain(name).create()

    @_calls
    def domain_resume(self, name: str) -> None:
        self._domain(name).resume()

    @_calls
    def domain_wakeup(self, name: str) -> None:
        self._domain(name).pMWakeup(0)

    @_calls
    def domain_destroy(self, name: str) -> None:
        self._domain(name).destroy()

    @_calls
    def domain_undefine(self, name: str) -> None:
        flags = (
            libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
            | libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA
            | libvirt.VIR_DOMAIN_UNDEFINE_NVRAM
            | getattr(libvirt, "VIR_DOMAIN_UNDEFINE_CHECKPOINTS_METADATA", 0)
        )
        self._domain(name).undefineFlags(flags)

    @_calls
    def domain_addresses(self, name: str, source: str) -> list:
        flag = {
            "agent": libvirt.VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT,
            "lease": libvirt.VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE,
            "arp": libvirt.VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_ARP,
        }[source]
        out = []
        for iface in (self._domain(name).interfaceAddresses(flag, 0) or {}).values():
            for addr in iface.get("addrs") or []:
                family = "ipv4" if addr.get("type") == libvirt.VIR_IP_ADDR_TYPE_IPV4 else "ipv6"
                out.append((family, addr.get("addr", "")))
        return out

    @_calls
    def pool_info(self, pool: str) -> backend.PoolInfo:
        state, capacity, allocation, available = self._pool(pool).info()
        return backend.PoolInfo(int(state), int(capacity), int(allocation), int(available))

    @_calls
    def pool_refresh(self, pool: str) -> None:
        self._pool(pool).refresh(0)

    @_calls
    def volume_names(self, pool: str) -> list:
        return list(self._pool(pool).listVolumes())

    @_calls
    def volume_info(self, pool: str, name: str) -> backend.VolumeInfo:
        _type, capacity, allocation = self._volume(pool, name).info()
        return backend.VolumeInfo(int(capacity), int(allocation))

    @_calls
    def volume_xml(self, pool: str, name: str) -> str:
        return self._volume(pool, name).XMLDesc(0)

    @_calls
    def volume_path(self, pool: str, name: str) -> str:
        return self._volume(pool, name).path()

    @_calls
    def volume_create(self, pool: str, xml: str) -> None:
        self._pool(pool).createXML(xml, 0)

    @_calls
    def volume_delete(self, pool: str, name: str) -> None:
        self._volume(pool, name).delete(0)

    @_calls
    def volume_upload(self, pool: str, name: str, length: int) -> _Upload:
        volume = self._volume(pool, name)
        stream = self._conn.newStream(0)
        try:
            volume.upload(stream, 0, length, 0)
        except libvirt.libvirtError:
            _Upload(stream).abort()
            raise
        return _Upload(stream)

    @_calls
    def volume_download(self, pool: str, name: str, limit: int) -> bytes:
        volume = self._volume(pool, name)
        stream = self._conn.newStream(0)
        volume.download(stream, 0, limit, 0)
        chunks, size = [], 0
        try:
            while size < limit:
                chunk = stream.recv(min(65536, limit - size))
                if not chunk or not isinstance(chunk, bytes):
                    break
                chunks.append(chunk)
                size += len(chunk)
            stream.finish()
        except libvirt.libvirtError:
            _Upload(stream).abort()
            raise
        return b"".join(chunks)


def check_credentials(key_file: str, known_hosts_file: str) -> None:
    """Both files must be readable now, through no path another user can change; their
    contents are left to libssh2 (never logged)."""
    for what, path in (("sshKeyFile", key_file), ("knownHostsFile", known_hosts_file)):
        if path:
            require_readable(path, what)


def uri_for(host, key_file: str, known_hosts_file: str, insecure: bool, transport: str = TRANSPORT) -> str:
    """``qemu+libssh2://user@address/system?...``; the URI names files, never their contents."""
    params = [("keyfile", key_file), ("sshauth", "privkey")]
    if insecure:
        params.append(("known_hosts_verify", "ignore"))
    else:
        params.append(("known_hosts", known_hosts_file))
        params.append(("known_hosts_verify", "normal"))
    if host.socket:
        params.append(("socket", host.socket))
    query = "&".join("%s=%s" % (k, urllib.parse.quote(v, safe="/")) for k, v in params)
    return "qemu+%s://%s@%s/system?%s" % (transport, host.user, host.address, query)


class LibvirtDialer:
    """Opens a fresh connection per call; credentials are checked and read on every dial. The
    libssh fallback, once found needed, is kept for the dialer's life (one module run)."""

    def __init__(self, config):
        self.config = config
        self.transport = TRANSPORT

    def dial(self, host) -> LibvirtConnection:
        if libvirt is None:
            raise LibraryMissing(
                "the libvirt-python library is required for the kvm/kvm2 providers "
                "(pip install libvirt-python; it builds against libvirt-dev and pkg-config): %s"
                % LIBVIRT_IMPORT_ERROR
            )
        cfg = self.config
        check_credentials(cfg.ssh_key_file, "" if cfg.insecure_ignore_host_key else cfg.known_hosts_file)
        try:
            return LibvirtConnection(self._open(host, self.transport))
        except libvirt.libvirtError as exc:
            if self.transport != TRANSPORT or _NOT_BUILT_IN not in str(exc):
                raise dial_errors.translated(exc, host, cfg) from None
        log.warning(
            "libvirt here has no libssh2 transport, falling back to libssh: replies of some sizes "
            "(large domain or volume listings) may then stall until the call budget ends"
        )
        self.transport = FALLBACK_TRANSPORT
        try:
            return LibvirtConnection(self._open(host, FALLBACK_TRANSPORT), FALLBACK_TRANSPORT)
        except libvirt.libvirtError as exc:
            raise dial_errors.translated(exc, host, cfg) from None

    def _open(self, host, transport: str):
        cfg = self.config
        return libvirt.open(
            uri_for(host, cfg.ssh_key_file, cfg.known_hosts_file, cfg.insecure_ignore_host_key, transport)
        )
