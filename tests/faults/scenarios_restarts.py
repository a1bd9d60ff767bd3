"""Real restarts of the backends themselves: the session's own kube-apiserver and etcd (the
control plane this pytest session started, not the cached binaries' other users), and the
libvirt fixture's own libvirtd and sshd, each stopped by its pid while the faulted calls run
and started again (same ports, same data) at heal."""

from __future__ import annotations

import contextlib

from contract import pids

from faults.scenario import Scenario


def _cluster(target):
    return target.backend.cluster


def control_plane_component(name: str, cluster_of=_cluster):
    """Inject: ``name`` of the test control plane (``cluster_of(target)``) stopped for the
    calls, restarted at heal."""

    @contextlib.contextmanager
    def inject(target):
        cluster = cluster_of(target)
        cluster.stop_component(name)
        try:
            yield 1
        finally:
            cluster.start_component(name)

    return inject


@contextlib.contextmanager
def libvirtd_restarted(target):
    """The fixture's libvirtd stopped by its pid (its guests keep running), started again at heal."""
    host = target.host
    pids.stop(host._libvirtd_pid)
    try:
        yield 1
    finally:
        host._start_libvirtd()
        host._conn = None  # the harness's own socket connection died with it: dial again


@contextlib.contextmanager
def sshd_restarted(target):
    """The fixture's sshd and its sessions stopped by pid (the pooled connection dies), then a
    new sshd on the same port at heal."""
    target.host.stop_sshd()
    try:
        yield 1
    finally:
        target.host.start_sshd()


SCENARIOS = [
    Scenario(
        "restart-kube-apiserver",
        "kube-apiserver stopped during the calls, restarted (same port, same etcd)",
        ("kubernetes",),
        control_plane_component("kube-apiserver"),
    ),
    Scenario(
        "restart-etcd",
        "etcd stopped during the calls (kube-apiserver up, its store gone), restarted on its data",
        ("kubernetes",),
        control_plane_component("etcd"),
    ),
    Scenario(
        "restart-libvirtd",
        "libvirtd stopped during the calls (its guests running), restarted",
        ("libvirt",),
        libvirtd_restarted,
    ),
    Scenario(
        "restart-sshd",
        "sshd and its sessions stopped during the calls, a new sshd on the same port",
        ("libvirt",),
        sshd_restarted,
    ),
]
