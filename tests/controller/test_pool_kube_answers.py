"""The pool loop's reads take no answer about another object (issue 28 §5, wherever it
applies): a Secret read, a Secret, Service or EndpointSlice written, the auth Secret and its
version are checked to be the kind and the object asked for, as the kubernetes provider checks its Pods.

A proxy in front of the API server that answers with another pool's Secret (its credentials
would go into this pool's endpoints) or with an HTML page is ``MalformedAnswer``: never read as
the object, nor as its absence. The messages name the objects, never a value."""

from __future__ import annotations

import base64
import json
import types

import pytest
from egress_proxies_controller.pool.kube_calls import METADATA_ONLY, PoolKube

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.kube_answers import MalformedAnswer

SENTINEL = "Sentinel-other-pools-password"


def answer(kind: str, namespace: str, name: str) -> dict:
    """An object as the API server writes it; a Secret's data is another pool's credentials."""
    data = {"username": b"crawler", "password": SENTINEL.encode()}
    body = {"kind": kind, "metadata": {"name": name, "namespace": namespace, "resourceVersion": "7"}}
    if kind == "Secret":
        body["data"] = {k: base64.b64encode(v).decode() for k, v in data.items()}
    return body


class Answering:
    """A client API whose every read answers ``body`` (raw, as ``_preload_content=False`` gives)
    and records the keyword arguments it was called with."""

    def __init__(self, body):
        self.body, self.calls = body, []

    def __getattr__(self, _method):
        def call(*args, **kwargs):
            self.calls.append((args, kwargs))
            data = self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()
            return types.SimpleNamespace(data=data)

        return call


def pool_kube(body) -> PoolKube:
    kube = PoolKube.__new__(PoolKube)
    kube.core = kube.discovery = Answering(body)
    kube.timeout = 5
    return kube


# What a read of ``kind`` ns/creds may be answered that is not ns/creds.
WRONG = {
    "another-object": lambda kind: answer(kind, "ns", "other-pool-creds"),
    "another-namespace": lambda kind: answer(kind, "other-ns", "creds"),
    "another-kind": lambda kind: answer("ConfigMap", "ns", "creds"),
    "not-json": lambda kind: b"<html>502 Bad Gateway</html>",
}


@pytest.mark.parametrize("case", WRONG)
def test_a_read_answered_about_another_object_is_malformed(case):
    with pytest.raises(MalformedAnswer):
        pool_kube(WRONG[case]("Secret")).read("Secret", "ns", "creds")


@pytest.mark.parametrize("case", WRONG)
@pytest.mark.parametrize("kind", ["Secret", "Service", "EndpointSlice"])
def test_a_write_answered_about_another_object_is_malformed(case, kind):
    """A create's or replace's answer is recorded as our own write: never another object's."""
    body = {"kind": kind, "metadata": {"name": "creds", "namespace": "ns", "resourceVersion": "7"}}
    with pytest.raises(MalformedAnswer):
        pool_kube(WRONG[case](kind)).create(kind, "ns", body)
    if kind != "Service":  # only ever created
        with pytest.raises(MalformedAnswer):
            pool_kube(WRONG[case](kind)).replace(kind, "ns", body)


@pytest.mark.parametrize("case", WRONG)
def test_an_auth_secret_answered_about_another_object_is_no_credentials(case):
    with pytest.raises(LookupError) as failed:
        pool_kube(WRONG[case]("Secret")).auth_source("ns", "creds")
    assert "auth Secret ns/creds" in str(failed.value) and SENTINEL not in str(failed.value)


@pytest.mark.parametrize("case", WRONG)
def test_a_version_answered_about_another_object_is_never_taken(case):
    with pytest.raises(MalformedAnswer):
        pool_kube(WRONG[case]("PartialObjectMetadata")).secret_version("ns", "creds")


def test_the_right_answers_read_and_the_version_asks_for_metadata_only():
    kube = pool_kube(answer("Secret", "ns", "creds"))
    assert kube.read("Secret", "ns", "creds")["metadata"]["name"] == "creds"
    assert kube.auth_source("ns", "creds") == (("crawler", SENTINEL), "7")
    kube = pool_kube(answer("PartialObjectMetadata", "ns", "creds"))
    assert kube.secret_version("ns", "creds") == "7"
    ((_args, kwargs),) = kube.core.calls
    assert kwargs["_headers"] == METADATA_ONLY and kwargs["_preload_content"] is False
