"""The machine's own libvirtd, as a hypervisor or a developer's machine runs it: the default
configuration, sockets and pid files under /run, domains under /etc/libvirt/qemu.

The ``system_libvirtd`` fixture makes sure one runs (virtlogd too) for a test that proves the
suite's private hypervisors coexist with it: when the machine already runs its own, that one is
used and left alone; otherwise the fixture starts both daemons the way ``libvirtd -d`` does on
a host without systemd, and stops them by the pid in their pid files afterwards. It holds the
machine-wide libvirt test lock meanwhile: two test sessions must not start and stop the
machine's daemon under each other (seen: one session's fixture stopped the daemon while the
other's waited for it).
"""

from __future__ import annotations

import contextlib
import subprocess

import libvirt
import pytest

from contract import leftovers, machine_lock, pids, readiness

SOCKET = "/run/libvirt/libvirt-sock"
VIRTLOGD_SOCKET = "/run/libvirt/virtlogd-sock"
URI = "qemu:///system"


class SystemLibvirtd:
    def __init__(self):
        self.started = []  # pids of the daemons started here

    def start(self) -> SystemLibvirtd:
        machine_lock.acquire(on_first=leftovers.remove_crashed_sessions)
        try:
            for name, socket_path in (("virtlogd", VIRTLOGD_SOCKET), ("libvirtd", SOCKET)):
                if readiness.connectable_unix(socket_path):
                    continue
                pid_file = "/run/%s.pid" % name
                subprocess.run([name, "-d"], check=True, timeout=60, stdin=subprocess.DEVNULL)
                readiness.wait_for(_listening(socket_path), 120, "the system " + name)
                self.started.append(pids.read_pid(pid_file))
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        try:
            for pid in reversed(self.started):
                pids.stop(pid)
            self.started = []
        finally:
            machine_lock.release()

    def connect(self):
        return libvirt.open(URI)

    def alive(self) -> bool:
        with contextlib.suppress(libvirt.libvirtError):
            conn = self.connect()
            try:
                return conn.getLibVersion() > 0
            finally:
                conn.close()
        return False


@pytest.fixture
def system_libvirtd():
    daemon = SystemLibvirtd().start()
    try:
        yield daemon
    finally:
        daemon.stop()


def _listening(socket_path: str):
    """A predicate: the daemon at ``socket_path`` accepts connections."""
    return lambda: readiness.connectable_unix(socket_path)
