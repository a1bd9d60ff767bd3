"""The start line naming each provider's identity (runs/identity.py): every source the
kubernetes block can take its credentials from, and never a token."""

from __future__ import annotations

import pytest
from egress_proxies_controller.runs import identity

TOKEN = "Sentinel-token-never-logged"


def test_run_environment_gives_the_flags_as_absolute_k8s_auth_variables(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert identity.run_environment(None, None) == {}
    assert identity.run_environment("kc.yaml", "ctl") == {
        "K8S_AUTH_KUBECONFIG": str(tmp_path / "kc.yaml"),
        "K8S_AUTH_CONTEXT": "ctl",
    }


@pytest.mark.parametrize(
    "block, run_env, environ, said",
    [
        (
            {},
            {"K8S_AUTH_KUBECONFIG": "/c.yaml"},
            {},
            "the controller's own kubeconfig /c.yaml, its current context (--kubeconfig)",
        ),
        (
            {"kubeconfig": "/p.yaml", "context": "x"},
            {"K8S_AUTH_KUBECONFIG": "/c.yaml"},
            {},
            "the providers file's kubeconfig /p.yaml, context x",
        ),
        (
            {"host": "https://k:6443", "apiKey": TOKEN},
            {},
            {},
            "the providers file's apiKey for https://k:6443",
        ),
        ({}, {}, {"K8S_AUTH_API_KEY": TOKEN}, "K8S_AUTH_API_KEY from the controller's environment"),
        (
            {},
            {},
            {"K8S_AUTH_KUBECONFIG": "/e.yaml"},
            "the controller's own kubeconfig /e.yaml, its current context (K8S_AUTH_KUBECONFIG)",
        ),
        (
            {},
            {},
            {},
            "kubeconfig (default: $KUBECONFIG or ~/.kube/config), its current context, as the controller",
        ),
    ],
)
def test_kubernetes_identity_names_its_source_never_a_token(block, run_env, environ, said):
    got = identity.describe({"name": "k", "type": "kubernetes", "kubernetes": block}, run_env, environ)
    assert got == said and TOKEN not in got


def test_other_providers_use_their_own_block():
    assert identity.describe({"name": "g", "type": "gcp"}, {"K8S_AUTH_KUBECONFIG": "/c"}, {}) == (
        "the credentials its gcp block names"
    )
