"""A real hypervisor for the libvirt provider's tests, started and stopped by the tests:
libvirtd and virtlogd, a transient directory pool, a real sshd on 127.0.0.1 with a generated
host key, client key and known_hosts, and base images (small qcow2 files made with qemu-img)
served over HTTP on loopback.

Both daemons run in a private mount namespace (``libvirt_namespace.sh``) whose libvirt state,
config, cache and log directories live in this host's own directory, so the suite coexists with
a machine's own libvirtd (a real hypervisor, a developer's laptop) and never sees its domains,
networks or pid files. The domain type (KVM or TCG) is proven by starting a throwaway guest
(``hypervisor_probe.py``), never inferred from /dev/kvm. The machine-wide lock is taken once
per process (``machine_lock.py``), and its first taker removes what a crashed session left
(``leftovers.py``). Daemons are stopped by their pid, never by name. Test domains are
recognised by this project's metadata namespace (or the test marker in their description).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import uuid

import libvirt
from listen_ports import free_port

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import metadata
from contract import hypervisor_probe, leftovers, machine_lock, pids, readiness

NAMESPACE_WRAPPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libvirt_namespace.sh")
TEST_MARK = "egress-proxies test domain"


def unmarked_domain_xml(name: str, domain_type: str = "qemu", memory_mib: int = 32) -> str:
    """An inactive domain made behind the provider's back: no marks of ours, only the test
    marker in its description (by which the host's clean-up removes it)."""
    return (
        "<domain type='%s'><name>%s</name><description>%s</description><memory unit='MiB'>%d</memory>"
        "<vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os><devices/></domain>"
        % (domain_type, name, TEST_MARK, memory_mib)
    )


SSHD = "/usr/sbin/sshd"

libvirt.registerErrorHandler(lambda _ctx, _err: None, None)


def _children(pid: int) -> list:
    """Every descendant of ``pid`` (from /proc), deepest first."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            continue
        parents.setdefault(int(text[text.rindex(")") + 2 :].split()[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return list(reversed(out))


def _stop(proc: subprocess.Popen | None, grace: float = 10.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


class LibvirtHost:
    def __init__(self):
        self.base = ""
        self.sshd_port = free_port()
        self.pool = "egress-test-" + uuid.uuid4().hex[:8]
        self.choice = None
        self._locked = False
        self._libvirtd_pid = 0
        self._virtlogd_pid = 0
        self._sshd = None
        self._conn = None

    def _paths(self) -> None:
        self.run_dir = os.path.join(self.base, "run")
        self.socket = os.path.join(self.run_dir, "libvirt-sock")
        self.namespace_dir = os.path.join(self.base, "namespace")
        self.pool_dir = os.path.join(self.base, "pool")
        self.ssh_dir = os.path.join(self.base, "ssh")
        self.key = os.path.join(self.ssh_dir, "client_key")
        self.known_hosts = os.path.join(self.ssh_dir, "known_hosts")

    @property
    def domain_type(self) -> str:
        """What the contract and module tests' domains use (a boot-level probe's answer)."""
        return self.choice.domain_type

    def domain_type_for_guests(self, image: str) -> hypervisor_probe.Choice:
        """The choice for guests that boot the real-guest image (a guest-level probe)."""
        return hypervisor_probe.choose(self.direct, self.base, level="guest", image=image)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> LibvirtHost:
        """Everything up, or everything that was started stopped again and the error raised."""
        machine_lock.acquire(on_first=leftovers.remove_crashed_sessions)
        self._locked = True
        try:
            self.base = tempfile.mkdtemp(prefix="egress-libvirt-", dir="/tmp")
            os.chmod(self.base, 0o755)  # qemu runs as libvirt-qemu and must reach the pool
            leftovers.mark_owner(self.base)
            self._paths()
            for path in (self.run_dir, self.pool_dir, self.ssh_dir, self.namespace_dir):
                os.makedirs(path, mode=0o755, exist_ok=True)
            self._start_virtlogd()
            self._start_libvirtd()
            self.remove_test_domains()
            self.direct().storagePoolCreateXML(
                "<pool type='dir'><name>%s</name><target><path>%s</path></target></pool>"
                % (self.pool, self.pool_dir),
                0,
            )
            self.choice = hypervisor_probe.choose(self.direct, self.base, level="boot")
            self._make_keys()
            self.start_sshd()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        try:
            if self._conn is not None:
                with contextlib.suppress(libvirt.libvirtError):
                    self.remove_test_domains()
                with contextlib.suppress(libvirt.libvirtError):
                    self._conn.storagePoolLookupByName(self.pool).destroy()
                with contextlib.suppress(libvirt.libvirtError):
                    self._conn.close()
                self._conn = None
            self.stop_sshd()
            pids.stop(self._libvirtd_pid)
            pids.stop(self._virtlogd_pid)
            self._libvirtd_pid = self._virtlogd_pid = 0
        finally:
            if self.base:
                shutil.rmtree(self.base, ignore_errors=True)
            if self._locked:
                self._locked = False
                machine_lock.release()

    def _daemon(self, name: str, argv: list, ready, seconds: float) -> int:
        """Start a daemon (``-d``: it forks and writes its pid file) in the private namespace;
        its pid."""
        pid_file = os.path.join(self.run_dir, name + ".pid")
        log = os.path.join(self.base, name + ".out")
        with open(log, "ab") as out:
            subprocess.run(
                [NAMESPACE_WRAPPER, self.namespace_dir, *argv, "-d", "-p", pid_file],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=True,
                timeout=60,
            )
        readiness.wait_for(lambda: pids.read_pid(pid_file) > 0 and ready(), seconds, name, log)
        return pids.read_pid(pid_file)

    def _start_virtlogd(self) -> None:
        socket_path = os.path.join(self.namespace_dir, "run", "virtlogd-sock")
        self._virtlogd_pid = self._daemon(
            "virtlogd", ["virtlogd"], lambda: readiness.connectable_unix(socket_path), 20
        )

    def _start_libvirtd(self) -> None:
        conf = os.path.join(self.base, "libvirtd.conf")
        with open(conf, "w", encoding="utf-8") as handle:
            handle.write(
                'unix_sock_dir = "%s"\nunix_sock_group = "root"\nunix_sock_rw_perms = "0700"\n'
                'auth_unix_rw = "none"\nauth_unix_ro = "none"\n'
                'log_outputs = "3:file:%s"\n' % (self.run_dir, os.path.join(self.base, "libvirtd.log"))
            )
        self._libvirtd_pid = self._daemon(
            "libvirtd", ["libvirtd", "-f", conf], lambda: readiness.connectable_unix(self.socket), 60
        )

    def domain_log(self, name: str) -> str:
        """qemu's log of one domain (virtlogd writes it in the private /var/log/libvirt)."""
        path = os.path.join(self.namespace_dir, "log", "qemu", name + ".log")
        with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
        return ""

    def _make_keys(self) -> None:
        for name in ("host_key", "client_key", "other_key"):
            subprocess.run(
                [
                    "ssh-keygen",
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    name,
                    "-f",
                    os.path.join(self.ssh_dir, name),
                ],
                check=True,
            )
        shutil.copy(self.key + ".pub", os.path.join(self.ssh_dir, "authorized_keys"))
        with open(self.known_hosts, "w", encoding="utf-8") as handle:
            handle.write(self.known_hosts_line("host_key"))

    def known_hosts_line(self, key_name: str) -> str:
        with open(os.path.join(self.ssh_dir, key_name + ".pub"), encoding="utf-8") as handle:
            kind, blob = handle.read().split()[:2]
        return "[127.0.0.1]:%d %s %s\n" % (self.sshd_port, kind, blob)

    def write_wrong_known_hosts(self) -> str:
        path = os.path.join(self.ssh_dir, "wrong_known_hosts")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.known_hosts_line("other_key"))
        return path

    def start_sshd(self) -> None:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation directory
        conf = os.path.join(self.ssh_dir, "sshd_config")
        with open(conf, "w", encoding="utf-8") as handle:
            handle.write(
                "ListenAddress 127.0.0.1:%d\nHostKey %s\nAuthorizedKeysFile %s\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n"
                "MaxStartups 100\nMaxSessions 100\nLogLevel INFO\n"
                % (
                    self.sshd_port,
                    os.path.join(self.ssh_dir, "host_key"),
                    os.path.join(self.ssh_dir, "authorized_keys"),
                )
            )
        with open(self.sshd_log, "ab") as out:
            self._sshd = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", conf],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        readiness.wait_for(lambda: readiness.connectable_tcp(self.sshd_port), 20, "sshd", self.sshd_log)

    def stop_sshd(self) -> None:
        """Stop the listener and every session it forked (an established session would
        otherwise outlive it): the provider's pooled connection dies too."""
        if self._sshd is None or self._sshd.poll() is not None:
            return
        sessions = _children(self._sshd.pid)
        _stop(self._sshd, 5)
        for pid in sessions:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self._sshd = None

    @property
    def sshd_log(self) -> str:
        return os.path.join(self.ssh_dir, "sshd.log")

    def ssh_logins(self) -> int:
        """Accepted SSH logins so far (every provider dial is one)."""
        with open(self.sshd_log, encoding="utf-8", errors="replace") as handle:
            return handle.read().count("Accepted publickey")

    # -- behind the provider's back ----------------------------------------------------------

    def direct(self):
        """A local libvirt connection on the unix socket (not through SSH)."""
        if self._conn is None or not self._conn.isAlive():
            self._conn = libvirt.open("qemu:///system?socket=%s" % self.socket)
        return self._conn

    def remove_test_domains(self) -> None:
        conn = self.direct()
        for dom in conn.listAllDomains(0):
            try:
                xml = dom.XMLDesc(0)
            except libvirt.libvirtError:
                continue
            if metadata.NAMESPACE_BASE not in xml and TEST_MARK not in xml:
                continue
            with contextlib.suppress(libvirt.libvirtError):
                dom.destroy()
            with contextlib.suppress(libvirt.libvirtError):
                dom.undefineFlags(
                    libvirt.VIR_DOMAIN_UNDEFINE_NVRAM
                    | libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
                    | libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA
                )

    def volumes(self) -> list:
        pool = self.direct().storagePoolLookupByName(self.pool)
        pool.refresh(0)
        return sorted(pool.listVolumes())

    def read_log(self) -> str:
        chunks = []
        for path in (os.path.join(self.base, "libvirtd.log"), self.sshd_log):
            with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as handle:
                chunks.append(handle.read())
        return "\n".join(chunks)


def make_image(directory: str, name: str = "base.qcow2", size: str = "64M") -> tuple:
    """A small qcow2 made with qemu-img; returns ``(bytes, sha256)``."""
    path = os.path.join(directory, name)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", path, size], check=True)
    with open(path, "rb") as handle:
        data = handle.read()
    return data, hashlib.sha256(data).hexdigest()
