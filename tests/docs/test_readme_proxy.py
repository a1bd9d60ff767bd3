"""README.md's Proxy manifest applied, as written, to the test API server with a real controller
on the local provider (real Squid): it becomes Ready and is cleaned up on delete. Only the
namespace is added (the README applies it to the current one)."""

from __future__ import annotations

import pytest
import yaml
from controller.test_e2e import E2E, started
from kubernetes import client as k8s

from controller import e2e_lib

from .markdown_blocks import blocks

pytestmark = [pytest.mark.squid]

controller_api = e2e_lib.controller_api


@pytest.fixture
def e2e(controller_api, kube_cluster, kube_namespace, tmp_path):
    yield from started(E2E(controller_api, kube_cluster, kube_namespace, tmp_path))


def test_readme_proxy_manifest_becomes_ready(e2e):
    [block] = [b for b in blocks("README.md") if b.text.startswith("apiVersion: crawl.example.com/")]
    body = yaml.safe_load(block.text)
    body["metadata"]["namespace"] = e2e.namespace
    group, version = body["apiVersion"].split("/")
    k8s.CustomObjectsApi(e2e.admin).create_namespaced_custom_object(
        group, version, e2e.namespace, e2e_lib.PLURAL, body
    )
    obj = e2e.wait_ready(body["metadata"]["name"], timeout=120)
    assert obj["status"]["state"] == "Running" and obj["status"]["ip"], obj["status"]
    assert len(e2e.instances()) == 1
