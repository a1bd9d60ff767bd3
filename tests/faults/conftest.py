"""Fixtures of the fault matrix: one Toxiproxy server per session, one target per matrix column
(each on the real backend the suite starts: the Compute Engine fake, the test control plane,
the test hypervisor over sshd, real Squid), and the results file written at session end."""

from __future__ import annotations

import contextlib
import json
import os
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
WORKERS: list = []  # under pytest-xdist, in the controller process: the workers that finished


def _results_path() -> str:
    """The results file, or this pytest-xdist worker's own part of it (merged at the end)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return results.worker_path(worker) if worker else results.RESULTS


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    WORKERS.append(node.gateway.id)


def pytest_sessionfinish(session):
    if OUTCOMES:
        results.write(OUTCOMES, time.monotonic() - STARTED, _results_path())
    if WORKERS:
        results.merge_workers(sorted(WORKERS), time.monotonic() - STARTED)


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
def controller_target(kube_cluster, kube_admin, tmp_path_factory, toxiproxy):
    """The controller's end-to-end surroundings of tests/controller (shipped CRDs and RBAC, a
    ServiceAccount kubeconfig, local providers), in a namespace of this session; plus a
    Toxiproxy link to the API server and a kubeconfig of the same ServiceAccount through it
    (``env.api_link``, ``env.link_kubeconfig``), and the control plane (``env.cluster``) for
    the restart cells."""
    from controller.test_e2e import E2E

    from controller import e2e_lib

    e2e_lib.install_api(kube_admin)
    e2e_lib.install_kubernetes_provider_rbac(kube_admin)
    namespace = kube_testlib.create_namespace(kube_admin)
    env = E2E(kube_admin, kube_cluster, namespace, tmp_path_factory.mktemp("controller-target"))
    env.column = "controller"
    env.cluster = kube_cluster
    env.api_link = toxiproxy.api.create("ctl-api-" + _tag(), kube_cluster.server.split("//", 1)[1])
    env.link_kubeconfig = _through(env.kubeconfig, env.api_link)
    # for the health-link cells (faults/health_rig.py), built on their first use
    env.toxiproxy, env.toxiproxy_log, env.tmp_factory = toxiproxy.api, toxiproxy.log_text, tmp_path_factory
    env.health_rig, env.exits = None, contextlib.ExitStack()
    try:
        yield env
    finally:
        try:
            env.exits.close()
            env.cleanup()
        finally:
            kube_testlib.delete_namespace(kube_admin, namespace)


def _through(kubeconfig: str, link) -> str:
    """A copy of ``kubeconfig`` (0600) that dials the API server through ``link``."""
    with open(kubeconfig, encoding="utf-8") as handle:
        doc = json.load(handle)
    for cluster in doc["clusters"]:
        cluster["cluster"]["server"] = "https://" + link.listen
    path = kubeconfig + ".through-toxiproxy"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(doc, handle)
    return path


@pytest.fixture
def target_of(request):
    """``target_of(column)``: the session target of that column (started on first use)."""
    return lambda column: request.getfixturevalue(column + "_target")


@pytest.fixture
def record():
    """Keep an outcome for the results file (written after every cell, so a session cut short
    still leaves what it found); returns it."""

    def keep(outcome):
        OUTCOMES.append(outcome)
        results.write(OUTCOMES, time.monotonic() - STARTED, _results_path())
        return outcome

    return keep
