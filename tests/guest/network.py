"""The real guests' network, made by the tests and removed by them; no packet leaves it.

    root namespace                              test namespace (ip netns)
    bridge BR (no address) --- veth VB <=> VN   198.18.213.1/24, udhcpd, HTTP server, clients
      `- the guests' taps (libvirt)
    veth TR 198.18.214.1/30   <=>   veth TN     198.18.214.2/30 (forwards to VN)
    route 198.18.213.0/24 via 198.18.214.2

Guests live on the bridge, which carries no address in the root namespace; the test namespace
holds the client side: DHCP for guests (busybox udhcpd from the guest image's own busybox), an
HTTP server, and the clients that fetch from it through a guest's proxy. The one route in the
root namespace (through the transit veth pair into the test namespace, which forwards) exists
so the controller's health engine, a root-namespace process like any controller, can probe a
guest. The test namespace has no default route, so nothing it forwards can leave it: a guest
reaches the namespace and the root namespace's transit address, nothing else. 198.18.0.0/15 is
reserved for network tests (RFC 2544) and routed nowhere.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

SUBNET = "198.18.213"
GATEWAY = SUBNET + ".1"
TRANSIT_ROOT = "198.18.214.1"
TRANSIT_NS = "198.18.214.2"
# Static addresses in tests sit below .100. Leases are short: a session boots tens of guests
# that live seconds, and udhcpd offers an expired lease again only after it checked by ARP that
# no live guest still holds the address.
DHCP_RANGE = (SUBNET + ".100", SUBNET + ".250")
HTTP_PORT = 8080


def in_dhcp_range(address: str) -> bool:
    low, high = (int(a.rsplit(".", 1)[1]) for a in DHCP_RANGE)
    prefix, _dot, last = address.rpartition(".")
    return prefix == SUBNET and last.isdigit() and low <= int(last) <= high


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), done.stderr.strip()))
    return done


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _no_ipv6(device: str) -> None:
    """A device of ours sends no router solicitation or other IPv6 chatter."""
    with contextlib.suppress(OSError):
        _write("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % device, "1")


NAMESPACE_PREFIX = "egress-guest-"
LINK_PREFIXES = ("egtbr", "egtb", "egtr")


def remove_leftovers() -> None:
    """What a crashed session left: its namespace (its processes are stopped by pid first, as
    ``ip netns pids`` lists them), its root-namespace links and its route. Called with the
    machine-wide libvirt test lock held (the fixture depends on the hypervisor's), so no other
    session's network is touched."""
    for line in ip("netns", "list").stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        if not name.startswith(NAMESPACE_PREFIX):
            continue
        for pid in ip("netns", "pids", name, check=False).stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        ip("netns", "del", name, check=False)
    ip("route", "del", SUBNET + ".0/24", "via", TRANSIT_NS, check=False)
    for line in ip("-o", "link", "show").stdout.splitlines():
        device = line.split(":")[1].strip().split("@")[0]
        if device.startswith(LINK_PREFIXES):
            ip("link", "del", device, check=False)


_shared = {"network": None, "users": 0}


def acquire_shared(busybox: str) -> GuestNetwork:
    """The process's one network (its subnet and route are fixed), started by the first user:
    the real-guest fixtures and the molecule surroundings share it when they run together."""
    if _shared["network"] is None:
        _shared["network"] = GuestNetwork(busybox).start()
    _shared["users"] += 1
    return _shared["network"]


def release_shared() -> None:
    if _shared["users"] == 0:
        return
    _shared["users"] -= 1
    if _shared["users"] == 0:
        network, _shared["network"] = _shared["network"], None
        network.stop()


class GuestNetwork:
    def __init__(self, busybox: str, directory: str | None = None):
        """``directory`` holds the configuration, logs and the served page (default: a new
        temporary directory, removed by ``stop``)."""
        tag = secrets.token_hex(3)
        self.namespace = NAMESPACE_PREFIX + tag
        self.bridge = "egtbr" + tag
        self.bridge_port, self.ns_port = "egtb" + tag, "egtn" + tag
        self.transit_root, self.transit_ns = "egtr" + tag, "egtt" + tag
        self.busybox = busybox
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.dir = directory or tempfile.mkdtemp(prefix="egress-guest-net-")
        self.marker = "egress-guest-marker-" + secrets.token_hex(8)
        self._processes = []

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> GuestNetwork:
        remove_leftovers()
        routes = ip("route", "show", "to", "match", GATEWAY).stdout.splitlines()
        conflict = [line for line in routes if line.strip() and not line.startswith("default")]
        if conflict:
            raise RuntimeError("%s is already routed on this machine (%s)" % (GATEWAY, conflict[0]))
        try:
            self._links()
            self._dhcp()
            self._http()
        except BaseException:
            self.stop()
            raise
        return self

    def _links(self) -> None:
        ip("netns", "add", self.namespace)
        ip("link", "add", self.bridge, "type", "bridge", "stp_state", "0", "forward_delay", "0")
        ip("link", "set", self.bridge, "type", "bridge", "nf_call_iptables", "0")
        _no_ipv6(self.bridge)
        ip("link", "add", self.bridge_port, "type", "veth", "peer", "name", self.ns_port)
        _no_ipv6(self.bridge_port)
        ip("link", "set", self.bridge_port, "master", self.bridge)
        ip("link", "add", self.transit_root, "type", "veth", "peer", "name", self.transit_ns)
        _no_ipv6(self.transit_root)
        for device in (self.ns_port, self.transit_ns):
            ip("link", "set", device, "netns", self.namespace)
        for device in (self.bridge, self.bridge_port, self.transit_root):
            ip("link", "set", device, "up")
        ip("addr", "add", TRANSIT_ROOT + "/30", "dev", self.transit_root)
        ip("route", "add", SUBNET + ".0/24", "via", TRANSIT_NS)
        self.run_in(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv4.ip_forward=1"])
        self.run_in(["ip", "link", "set", "lo", "up"])
        self.run_in(["ip", "addr", "add", GATEWAY + "/24", "dev", self.ns_port])
        self.run_in(["ip", "addr", "add", TRANSIT_NS + "/30", "dev", self.transit_ns])
        for device in (self.ns_port, self.transit_ns):
            self.run_in(["ip", "link", "set", device, "up"])

    def _dhcp(self) -> None:
        leases = os.path.join(self.dir, "udhcpd.leases")
        _write(leases, "")
        conf = os.path.join(self.dir, "udhcpd.conf")
        _write(
            conf,
            "start %s\nend %s\ninterface %s\nlease_file %s\npidfile %s\n"
            "option subnet 255.255.255.0\noption router %s\noption lease 600\n"
            % (*DHCP_RANGE, self.ns_port, leases, os.path.join(self.dir, "udhcpd.pid"), GATEWAY),
        )
        self._spawn("udhcpd", [self.busybox, "udhcpd", "-f", conf])

    def _http(self) -> None:
        root = os.path.join(self.dir, "www")
        os.makedirs(root)
        _write(os.path.join(root, "marker"), self.marker)
        self._spawn(
            "http",
            ["python3", "-m", "http.server", "--bind", GATEWAY, "--directory", root, str(HTTP_PORT)],
        )
        end = time.monotonic() + 20
        while time.monotonic() < end:
            probe = self.run_in(["curl", "-s", "--noproxy", "*", "-m", "2", self.marker_url], check=False)
            if probe.stdout == self.marker:
                return
            time.sleep(0.1)
        raise RuntimeError("the HTTP server in %s did not come up" % self.namespace)

    def _spawn(self, name: str, argv: list) -> None:
        log = open(os.path.join(self.dir, name + ".log"), "ab")  # noqa: SIM115 - the child keeps it
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self._processes.append(proc)

    def stop(self) -> None:
        for proc in self._processes:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        self._processes = []
        ip("route", "del", SUBNET + ".0/24", "via", TRANSIT_NS, check=False)
        ip("netns", "del", self.namespace, check=False)  # takes the namespace's veth ends along
        for device in (self.bridge_port, self.transit_root, self.bridge):
            ip("link", "del", device, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- use --------------------------------------------------------------------------------

    @property
    def marker_url(self) -> str:
        return "http://%s:%d/marker" % (GATEWAY, HTTP_PORT)

    def run_in(self, argv: list, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run a command inside the test namespace."""
        return subprocess.run(
            ["ip", "netns", "exec", self.namespace, *argv],
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def fetch_through(self, proxy_ip: str, port: int) -> subprocess.CompletedProcess:
        """From inside the namespace: GET the marker through the proxy at ``proxy_ip:port``."""
        return self.run_in(
            ["curl", "-s", "-S", "-m", "10", "-x", "http://%s:%d" % (proxy_ip, port), self.marker_url],
            check=False,
        )

    def add_neighbour(self, address: str, mac: str) -> None:
        """A permanent entry in the root namespace's neighbour table, on the bridge: what an ARP
        exchange there would leave (the bridge has no address to make one itself). Removed
        with the bridge."""
        ip("neigh", "replace", address, "lladdr", mac, "dev", self.bridge, "nud", "permanent")

    def http_log(self) -> str:
        with open(os.path.join(self.dir, "http.log"), encoding="utf-8", errors="replace") as handle:
            return handle.read()
