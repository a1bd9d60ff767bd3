"""An in-memory libvirt behind the provider's seam (``backend.Connection``), for unit tests.

It behaves like the real one where the provider can tell: the same error codes for a missing
domain, volume or pool, an existing volume, a domain that is (not) running; metadata per XML
namespace; volumes filled by uploads. Tests reach into ``FakeHost`` to set states, addresses,
sizes, inject failures (``fail``) or make a call block until released (``block``).
"""

from __future__ import annotations

import threading
import xml.etree.ElementTree as ET

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import backend as b

GIB = 1024**3


def err(code: int, text: str = "", domain: int = 0) -> b.LibvirtCallError:
    return b.LibvirtCallError(code, text or "libvirt error %d" % code, domain)


class FakeHost:
    def __init__(self, name: str = "h1", pool: str = "default"):
        self.name = name
        self.hostname = "hv-" + name
        self.version = 9000000
        self.memory = 16 * GIB
        self.domains = {}
        self.pools = {
            pool: {"state": b.POOL_RUNNING, "capacity": 100 * GIB, "available": 80 * GIB, "volumes": {}}
        }
        # libvirt's max vCPUs per domain type, or the error asking for it raises.
        self.max_vcpus = {"kvm": 1024, "qemu": 16}
        # the host CPU's features in its capabilities XML (vmx: KVM with hardware virtualisation)
        self.cpu_features = ["vme", "vmx", "hypervisor"]
        self.start_error = None  # raised by every domain start, which leaves it off/failed
        self.fail = {}  # method -> exception to raise (once per entry if a list)
        self.block = {}  # method -> threading.Event the call waits on
        self.calls = []  # (connection serial, method, args)
        self.lock = threading.RLock()

    # -- helpers for tests -------------------------------------------------------------------

    def volumes(self, pool: str = "default") -> dict:
        return self.pools[pool]["volumes"]

    def add_domain(self, name: str, state: int = b.DOMAIN_RUNNING, metadata: dict | None = None):
        self.domains[name] = {
            "xml": "<domain/>",
            "state": state,
            "metadata": dict(metadata or {}),
            "addresses": {},
        }


class FakeUpload:
    def __init__(self, conn, pool, name, length):
        self.conn, self.pool, self.name, self.length = conn, pool, name, length
        self.buffer = bytearray()
        self.aborted = False

    def send(self, data: bytes) -> None:
        self.conn._enter("upload_send", (self.name, len(data)))
        self.buffer += data

    def finish(self) -> None:
        self.conn._enter("upload_finish", (self.name,))
        vol = self.conn._vol(self.pool, self.name)
        vol["data"] = bytes(self.buffer)

    def abort(self) -> None:
        self.aborted = True


class FakeConnection:
    _serials = iter(range(1, 1_000_000))

    def __init__(self, host: FakeHost):
        self.host = host
        self.serial = next(FakeConnection._serials)
        self.alive = True
        self.closed = False

    def _enter(self, method, args=()):
        host = self.host
        with host.lock:
            host.calls.append((self.serial, method, args))
            failure = host.fail.get(method)
            if isinstance(failure, list):
                failure = failure.pop(0) if failure else None
                if not host.fail[method]:
                    host.fail.pop(method)
        event = host.block.get(method)
        if event is not None:
            event.wait(30)
        if not self.alive:
            raise err(b.ERR_SYSTEM_ERROR, "End of file while reading data: Input/output error")
        if failure is not None:
            raise failure

    def _domain(self, name):
        dom = self.host.domains.get(name)
        if dom is None:
            raise err(b.ERR_NO_DOMAIN, "Domain not found: no domain with matching name '%s'" % name)
        return dom

    def _pool(self, pool):
        found = self.host.pools.get(pool)
        if found is None:
            raise err(
                b.ERR_NO_STORAGE_POOL,
                "Storage pool not found: no storage pool with matching name '%s'" % pool,
            )
        return found

    def _vol(self, pool, name):
        vol = self._pool(pool)["volumes"].get(name)
        if vol is None:
            raise err(
                b.ERR_NO_STORAGE_VOL,
                "Storage volume not found: no storage vol with matching name '%s'" % name,
            )
        return vol

    # -- the seam ----------------------------------------------------------------------------

    def close(self):
        self.closed = True
        self.alive = False

    def is_alive(self):
        return self.alive

    def lib_version(self):
        self._enter("lib_version")
        return self.host.version

    def hostname(self):
        self._enter("hostname")
        return self.host.hostname

    def available_memory(self):
        self._enter("available_memory")
        return self.host.memory

    def domain_names(self):
        self._enter("domain_names")
        return list(self.host.domains)

    def domain_state(self, name):
        self._enter("domain_state", (name,))
        return self._domain(name)["state"]

    def domain_state_reason(self, name):
        self._enter("domain_state_reason", (name,))
        dom = self._domain(name)
        return dom["state"], dom.get("reason", 0)

    def capabilities(self):
        self._enter("capabilities", ())
        features = "".join("<feature name='%s'/>" % f for f in self.host.cpu_features)
        return (
            "<capabilities><host><uuid>0</uuid><cpu><arch>x86_64</arch><model>Broadwell</model>"
            "%s</cpu></host></capabilities>" % features
        )

    def max_vcpus(self, virt_type):
        self._enter("max_vcpus", (virt_type,))
        found = self.host.max_vcpus.get(virt_type)
        if found is None:
            raise err(b.ERR_INVALID_ARG, "invalid argument: unknown type '%s'" % virt_type)
        if isinstance(found, Exception):
            raise found
        return found

    def domain_metadata(self, name, uri):
        self._enter("domain_metadata", (name, uri))
        found = self._domain(name)["metadata"].get(uri)
        if found is None:
            raise err(
                b.ERR_NO_DOMAIN_METADATA, "metadata not found: Requested metadata element is not present"
            )
        return found

    def domain_define(self, xml):
        self._enter("domain_define", ("<xml>",))
        root = ET.fromstring(xml)
        name = root.findtext("name")
        metadata = {}
        for child in root.find("metadata") if root.find("metadata") is not None else []:
            uri = child.tag[1:].split("}")[0]
            metadata[uri] = ET.tostring(child, encoding="unicode")
        existing = self.host.domains.get(name)
        state = existing["state"] if existing else b.DOMAIN_SHUTOFF
        self.host.domains[name] = {"xml": xml, "state": state, "metadata": metadata, "addresses": {}}

    def domain_start(self, name):
        self._enter("domain_start", (name,))
        dom = self._domain(name)
        if dom["state"] in (b.DOMAIN_RUNNING, b.DOMAIN_BLOCKED, b.DOMAIN_PAUSED):
            raise err(b.ERR_OPERATION_INVALID, "Requested operation is not valid: domain is already running")
        if self.host.start_error is not None:
            dom["state"], dom["reason"] = b.DOMAIN_SHUTOFF, 6  # VIR_DOMAIN_SHUTOFF_FAILED
            raise self.host.start_error
        dom["state"], dom["reason"] = b.DOMAIN_RUNNING, 1

    def domain_resume(self, name):
        self._enter("domain_resume", (name,))
        dom = self._domain(name)
        if dom["state"] != b.DOMAIN_PAUSED:
            raise err(b.ERR_OPERATION_INVALID, "domain is not paused")
        dom["state"] = b.DOMAIN_RUNNING

    def domain_wakeup(self, name):
        self._enter("domain_wakeup", (name,))
        dom = self._domain(name)
        if dom["state"] != b.DOMAIN_PMSUSPENDED:
            raise err(b.ERR_OPERATION_INVALID, "domain is not suspended")
        dom["state"] = b.DOMAIN_RUNNING

    def domain_destroy(self, name):
        self._enter("domain_destroy", (name,))
        dom = self._domain(name)
        if dom["state"] in (b.DOMAIN_SHUTOFF,):
            raise err(b.ERR_OPERATION_INVALID, "Requested operation is not valid: domain is not running")
        dom["state"] = b.DOMAIN_SHUTOFF

    def domain_undefine(self, name):
        self._enter("domain_undefine", (name,))
        self._domain(name)
        del self.host.domains[name]

    def domain_addresses(self, name, source):
        self._enter("domain_addresses_" + source, (name,))
        return list(self._domain(name)["addresses"].get(source, []))

    def pool_info(self, pool):
        self._enter("pool_info", (pool,))
        p = self._pool(pool)
        return b.PoolInfo(p["state"], p["capacity"], p["capacity"] - p["available"], p["available"])

    def pool_refresh(self, pool):
        self._enter("pool_refresh", (pool,))
        self._pool(pool)

    def volume_names(self, pool):
        self._enter("volume_names", (pool,))
        return list(self._pool(pool)["volumes"])

    def volume_info(self, pool, name):
        self._enter("volume_info", (pool, name))
        vol = self._vol(pool, name)
        return b.VolumeInfo(vol["capacity"], len(vol["data"]))

    def volume_xml(self, pool, name):
        self._enter("volume_xml", (pool, name))
        vol = self._vol(pool, name)
        backing = ""
        if vol.get("backing"):
            backing = "<backingStore><path>%s</path><format type='qcow2'/></backingStore>" % vol["backing"]
        return "<volume><name>%s</name><capacity unit='bytes'>%d</capacity>%s</volume>" % (
            name,
            vol["capacity"],
            backing,
        )

    def volume_path(self, pool, name):
        self._enter("volume_path", (pool, name))
        self._vol(pool, name)
        return "/pools/%s/%s" % (pool, name)

    def volume_create(self, pool, xml):
        self._enter("volume_create", ("<xml>",))
        root = ET.fromstring(xml)
        name = root.findtext("name")
        volumes = self._pool(pool)["volumes"]
        if name in volumes:
            raise err(b.ERR_STORAGE_VOL_EXIST, "storage volume '%s' exists already" % name)
        volumes[name] = {
            "capacity": int(root.findtext("capacity")),
            "data": b"",
            "backing": root.findtext("backingStore/path") or "",
            "xml": xml,
        }

    def volume_delete(self, pool, name):
        self._enter("volume_delete", (pool, name))
        self._vol(pool, name)
        del self._pool(pool)["volumes"][name]

    def volume_upload(self, pool, name, length):
        self._enter("volume_upload", (pool, name, length))
        self._vol(pool, name)
        return FakeUpload(self, pool, name, length)

    def volume_download(self, pool, name, limit):
        self._enter("volume_download", (pool, name))
        return self._vol(pool, name)["data"][:limit]


class FakeDialer:
    """Dials ``FakeConnection``s to the ``FakeHost`` named like the config host."""

    def __init__(self, *hosts: FakeHost):
        self.hosts = {h.name: h for h in hosts}
        self.dials = []  # host names, in order
        self.connections = []
        self.fail = {}  # host name -> exception
        self.block = {}  # host name -> Event

    def dial(self, host):
        self.dials.append(host.name)
        event = self.block.get(host.name)
        if event is not None:
            event.wait(30)
        if host.name in self.fail:
            raise self.fail[host.name]
        conn = FakeConnection(self.hosts[host.name])
        self.connections.append(conn)
        return conn
