"""pytest fixtures for the test control plane, loaded for every test directory through
``pytest_plugins`` in tests/conftest.py.

``kube_cluster`` (session) starts the control plane the first time a test asks for it
(building the binaries first if this machine has none: progress shows on stderr) and stops
it, by pid, when the session ends; a session without Kubernetes tests starts nothing.
``kube_admin`` is a cluster-admin client (the Proxy CRD and the kubernetes provider's
ClusterRole are applied); ``kube_namespace`` a fresh namespace per test, deleted afterwards.
"""

from __future__ import annotations

import shutil

import pytest

from cluster import kube_testlib
from cluster.kube_cluster import ControlPlane


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory):
    plane = ControlPlane(str(tmp_path_factory.mktemp("kube-cluster")), die_with_parent=True)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()
        # etcd preallocates 64 MiB WAL segments: do not leave them in pytest's kept temp dirs.
        shutil.rmtree(plane.dir + "/etcd", ignore_errors=True)


@pytest.fixture(scope="session")
def kube_admin(kube_cluster):
    client = kube_testlib.api_client(kube_cluster.kubeconfig)
    kube_testlib.ensure_provider_role(client)
    # Early: the controller-manager's garbage collector picks up new resource types only on its
    # 30 s discovery resync, and the OwnerReference tests wait for it.
    kube_testlib.apply_proxy_crd(client)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def kube_namespace(kube_admin):
    name = kube_testlib.create_namespace(kube_admin)
    try:
        yield name
    finally:
        kube_testlib.delete_namespace(kube_admin, name)
