"""The Kubernetes objects the documentation shows, taken from the Markdown and checked by the
real API server of the test control plane: a server-side dry run (schema, defaulting, CEL rules
and strict field validation; nothing is stored), with the project's CRDs installed.
A Kustomization is not an API object: the kustomize tests render the real ones."""

from __future__ import annotations

import os

import pytest
import yaml
from cluster import kube_testlib
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient

from .classify import kind
from .markdown_blocks import ROOT, all_blocks

CRDS = os.path.join(ROOT, "controller", "config", "crd")


def _objects() -> list:
    out = []
    for block in all_blocks():
        if kind(block) != "manifest":
            continue
        for document in yaml.safe_load_all(block.text):
            if document and not document["apiVersion"].startswith("kustomize.config.k8s.io/"):
                out.append((block.where, document))
    return out


OBJECTS = _objects()


@pytest.fixture(scope="module")
def dynamic(kube_admin):
    for name in ("crawl.example.com_proxies.yaml", "crawl.example.com_proxypools.yaml"):
        kube_testlib.apply_proxy_crd(kube_admin, os.path.join(CRDS, name))
    core = k8s.CoreV1Api(kube_admin)
    for namespace in {pair[1]["metadata"].get("namespace", "default") for pair in OBJECTS}:
        try:
            core.read_namespace(namespace)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
            core.create_namespace({"metadata": {"name": namespace}})
    return DynamicClient(kube_admin)


@pytest.mark.parametrize(("where", "obj"), OBJECTS, ids=[pair[0] for pair in OBJECTS])
def test_the_api_server_accepts_the_documented_object(dynamic, where, obj):
    resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    stored = resource.server_side_apply(
        body=obj,
        name=obj["metadata"]["name"],
        namespace=obj["metadata"].get("namespace", "default"),
        field_manager="egress-proxies-doc-test",
        force_conflicts=True,
        dry_run="All",
        field_validation="Strict",
    ).to_dict()
    assert stored["metadata"]["name"] == obj["metadata"]["name"], where


def test_the_dry_run_refuses_a_broken_example(dynamic):
    """The check above could pass by accepting anything: an unknown field and a bad port fail."""
    where, obj = OBJECTS[0]
    for field, value, said in (("bogusField", 1, "bogusField"), ("port", 70000, "port")):
        broken = yaml.safe_load(yaml.safe_dump(obj))
        broken["spec"][field] = value
        with pytest.raises(Exception, match=said):
            test_the_api_server_accepts_the_documented_object(dynamic, where, broken)
