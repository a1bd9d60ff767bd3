"""The conformance suite for the ``kubernetes`` provider against the real test control plane
(kube-apiserver, etcd, scheduler, controller-manager and a kwok node; tests/cluster)."""

from __future__ import annotations

from contract.kubernetes_backend import kubernetes_backend
from contract.suite import ContractSuite

backend = kubernetes_backend  # the fixture, by the name the suite asks for


class TestKubernetesContract(ContractSuite):
    """Every contract rule, against a real API server with RBAC."""
