"""The conformance suite for the ``kubernetes`` provider against the real test control plane
(kube-apiserver, etcd, scheduler, controller-manager and a kwok node; tests/cluster)."""

from __future__ import annotations

import pytest

from contract.kubernetes_backend import KubernetesBackend
from contract.suite import ContractSuite


@pytest.fixture
def backend(kube_cluster, kube_admin, kube_namespace, tmp_path):
    harness = KubernetesBackend(kube_cluster, kube_admin, kube_namespace, tmp_path)
    try:
        yield harness
    finally:
        harness.teardown()


class TestKubernetesContract(ContractSuite):
    """Every contract rule, against a real API server with RBAC."""
