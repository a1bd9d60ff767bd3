"""Fixtures of the fault matrix: one Toxiproxy server per session, one target per matrix column
(each on the real backend the suite starts: the Compute Engine fake, the test control plane,
the test hypervisor over sshd, real Squid), and the results file written at session end."""

from __future__ import annotations

import time
import uuid

import pytest
from cluster import kube_testlib
from contract import libvirt_fixtures

from faults import results
from faults.target_gcp import GcpTarget
from faults.target_kubernetes import KubernetesTarget
from faults.target_libvirt import LibvirtTarget
from faults.target_local import LocalTarget
from faults.toxiproxy_server import ToxiproxyServer

libvirt_host = libvirt_fixtures.libvirt_host
image_host = libvirt_fixtures.image_host

OUTCOMES: list = []
STARTED = time.monotonic()


def pytest_sessionfinish(session):
    if OUTCOMES:
        results.write(OUTCOMES, time.monotonic() - STARTED)


@pytest.fixture(scope="session")
def toxiproxy(tmp_path_factory):
    server = ToxiproxyServer(str(tmp_path_factory.mktemp("toxiproxy") / "toxiproxy.log"))
    try:
        yield server
    finally:
        server.stop()


def _tag() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def gcp_target(toxiproxy):
    target = GcpTarget(toxiproxy.api, _tag())
    yield target
    target.close()


@pytest.fixture(scope="session")
def kubernetes_target(toxiproxy, kube_cluster, kube_admin, tmp_path_factory):
    namespace = kube_testlib.create_namespace(kube_admin)
    target = KubernetesTarget(
        toxiproxy.api, _tag(), kube_cluster, kube_admin, namespace, tmp_path_factory.mktemp("k8s-target")
    )
    yield target
    try:
        target.close()
    finally:
        kube_testlib.delete_namespace(kube_admin, namespace)


@pytest.fixture(scope="session")
def libvirt_target(toxiproxy, libvirt_host, image_host):
    target = LibvirtTarget(toxiproxy.api, _tag(), libvirt_host, image_host)
    yield target
    target.close()


@pytest.fixture(scope="session")
def local_target(tmp_path_factory):
    target = LocalTarget(tmp_path_factory.mktemp("local-target"))
    yield target
    target.close()


@pytest.fixture(scope="session")
def controller_target(kube_cluster, kube_admin, tmp_path_factory):
    """The controller's end-to-end surroundings of tests/controller (shipped CRDs and RBAC, a
    ServiceAccount kubeconfig, local providers), in a namespace of this session."""
    from controller.test_e2e import E2E

    from controller import e2e_lib

    e2e_lib.install_api(kube_admin)
    e2e_lib.install_kubernetes_provider_rbac(kube_admin)
    namespace = kube_testlib.create_namespace(kube_admin)
    env = E2E(kube_admin, kube_cluster, namespace, tmp_path_factory.mktemp("controller-target"))
    env.column = "controller"
    try:
        yield env
    finally:
        try:
            env.cleanup()
        finally:
            kube_testlib.delete_namespace(kube_admin, namespace)


@pytest.fixture
def target_of(request):
    """``target_of(column)``: the session target of that column (started on first use)."""
    return lambda column: request.getfixturevalue(column + "_target")


@pytest.fixture
def record():
    """Keep an outcome for the results file; returns it."""

    def keep(outcome):
        OUTCOMES.append(outcome)
        return outcome

    return keep
