"""The pool loop tells a changed auth Secret from one metadata-only read, against the real API
server: the version it answers is the Secret's resourceVersion, it moves with every write and
with a delete and re-create, an absent Secret is None, and no value crosses the wire."""

from __future__ import annotations

import base64
import json

import pytest
from egress_proxies_controller.kube.client import Kube
from egress_proxies_controller.pool.auth import PoolAuth
from egress_proxies_controller.pool.kube_calls import METADATA_ONLY, PoolKube
from egress_proxies_controller.pool.model import Pool
from kubernetes import client as k8s

SENTINEL = "Sentinel-pool-secret-version"


def _secret(namespace: str, password: str) -> dict:
    return {
        "metadata": {"name": "creds", "namespace": namespace},
        "data": {
            "username": base64.b64encode(b"crawler").decode(),
            "password": base64.b64encode(password.encode()).decode(),
        },
    }


def test_the_version_follows_every_write_of_the_secret(kube_admin, kube_namespace):
    pools, core = PoolKube(Kube(kube_admin)), k8s.CoreV1Api(kube_admin)
    assert pools.secret_version(kube_namespace, "creds") is None
    made = core.create_namespaced_secret(kube_namespace, _secret(kube_namespace, SENTINEL))
    first = pools.secret_version(kube_namespace, "creds")
    assert first == made.metadata.resource_version
    credentials, version = pools.auth_source(kube_namespace, "creds")
    assert (credentials, version) == (("crawler", SENTINEL), first), "one read: content and version"

    core.patch_namespaced_secret("creds", kube_namespace, _secret(kube_namespace, "Rotated-1"))
    second = pools.secret_version(kube_namespace, "creds")
    assert second not in (None, first)
    core.delete_namespaced_secret("creds", kube_namespace)
    assert pools.secret_version(kube_namespace, "creds") is None
    core.create_namespaced_secret(kube_namespace, _secret(kube_namespace, "Rotated-1"))
    assert pools.secret_version(kube_namespace, "creds") not in (None, first, second)


def test_the_version_read_carries_no_value(kube_admin, kube_namespace):
    """What ``secret_version`` asks for (``METADATA_ONLY``) is the Secret's metadata alone."""
    core = k8s.CoreV1Api(kube_admin)
    core.create_namespaced_secret(kube_namespace, _secret(kube_namespace, SENTINEL))
    answer = core.read_namespaced_secret(
        "creds", kube_namespace, _preload_content=False, _headers=METADATA_ONLY
    ).data
    body = json.loads(answer)
    assert body["kind"] == "PartialObjectMetadata" and "data" not in body
    assert base64.b64encode(SENTINEL.encode()) not in answer and SENTINEL.encode() not in answer


def _pool(namespace: str) -> Pool:
    return Pool.from_object(
        {
            "metadata": {"name": "web", "namespace": namespace, "uid": "u-web", "generation": 1},
            "spec": {
                "replicas": 1,
                "template": {"provider": "local", "auth": {"secretRef": {"name": "creds"}}},
            },
        }
    )


def test_a_missing_pool_secret_or_key_names_the_keys_it_needs(kube_admin, kube_namespace):
    """Issue 37: a ProxyPool's missing auth Secret (or key) said what was missing but not what the
    Secret must hold, as the Proxy's message does (tests/controller/test_auth_secret.py)."""
    auth, core = PoolAuth(PoolKube(Kube(kube_admin))), k8s.CoreV1Api(kube_admin)
    needs = (
        "; it needs the keys username and password (kubectl create secret generic creds -n %s"
        " --from-literal=username=... --from-literal=password=...)" % kube_namespace
    )
    with pytest.raises(LookupError) as caught:
        auth.current(_pool(kube_namespace))
    assert str(caught.value) == "auth Secret %s/creds: Not Found%s" % (kube_namespace, needs)
    only_username = {
        "metadata": {"name": "creds"},
        "data": {"username": base64.b64encode(b"crawler").decode()},
    }
    core.create_namespaced_secret(kube_namespace, only_username)
    with pytest.raises(LookupError) as caught:
        auth.current(_pool(kube_namespace))
    assert str(caught.value) == "auth Secret %s/creds has no key 'password'%s" % (kube_namespace, needs)
