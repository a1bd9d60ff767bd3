"""The gcp sample (controller/config/samples/other-providers/proxy_gcp.yaml) works as written: its
image is one docs/gcp-provider.md documents to run cloud-init (a Debian image would ignore the user-data, so
Squid would never be installed), and created through the controller's own translation of a
Proxy into module fields, with the sample providers ConfigMap's gcp block, against the local
Compute Engine fake with the real google-cloud-compute client, the VM gets exactly that image
and the sample's cloud-init as its user-data, and reaches Running.

The samples' schema (the Proxy CRD) is checked by a server-side dry run in
tests/controller/test_kustomize.py.
"""

from __future__ import annotations

import os
import uuid

import pytest
import yaml
from egress_proxies_controller.proxy import run_inputs
from fakes.gcp import FakeCompute
from fakes.gcp.model import Timing

from .playbook import ROOT, run_playbook

pytestmark = [pytest.mark.playbook]

SAMPLES = os.path.join(ROOT, "controller", "config", "samples", "other-providers")
# The image projects docs/gcp-provider.md says run cloud-init ("Ubuntu cloud images do").
CLOUD_INIT_PROJECTS = {"ubuntu-os-cloud"}
NO_CLOUD_INIT_PROJECTS = {"debian-cloud"}
PI = "crawl.egress_proxies.proxy_instance"


def sample(name: str) -> dict:
    with open(os.path.join(SAMPLES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def sample_providers() -> dict:
    configmap = sample("providers_configmap.yaml")
    return yaml.safe_load(configmap["data"]["providers.yaml"])


def image_project(image: str) -> str:
    return image.split("projects/", 1)[1].split("/", 1)[0]


def test_the_gcp_sample_names_an_image_documented_to_run_cloud_init():
    with open(os.path.join(ROOT, "docs", "gcp-provider.md"), encoding="utf-8") as handle:
        doc = handle.read()
    assert "Ubuntu cloud images do; the `debian-cloud` images do **not**" in doc
    proxy = sample("proxy_gcp.yaml")
    project = image_project(proxy["spec"]["placement"]["image"])
    assert project in CLOUD_INIT_PROJECTS and project not in NO_CLOUD_INIT_PROJECTS
    inline = proxy["spec"]["cloudInit"]["inline"]
    assert inline.startswith("#cloud-config\n")
    config = yaml.safe_load(inline)
    assert "squid" in config["packages"]
    assert ["systemctl", "restart", "squid"] in config["runcmd"]


def test_the_gcp_sample_creates_its_vm_on_the_fake(tmp_path):
    proxy = sample("proxy_gcp.yaml")
    providers = sample_providers()
    (block,) = [p for p in providers["providers"] if p["name"] == proxy["spec"]["provider"]]
    fake = FakeCompute(block["gcp"]["project"], timing=Timing(provisioning=0.3, staging=0.3, operation=0.4))
    fake.start()
    try:
        block["gcp"]["apiEndpoint"] = fake.endpoint
        proxy["metadata"]["uid"] = str(uuid.uuid4())
        # What the controller asks of the module for this Proxy (inline cloud-init needs no Secret).
        fields = run_inputs.create_fields(None, proxy)
        item = dict(fields, provider=block["name"], uid=proxy["metadata"]["uid"], wait=True, wait_timeout=30)
        defaults = {"providers": [block], "installation": "samples-%s" % uuid.uuid4().hex[:8]}
        run = run_playbook(tmp_path, [{"name": "create", PI: item}], module_defaults=defaults)
        assert run.rc == 0, run.stdout[-3000:]
        assert run["create"]["instance"]["state"] == "Running"
        (insert,) = [r for r in fake.log() if r.method == "POST" and r.path.endswith("/instances")]
        disk = insert.body["disks"][0]["initializeParams"]
        assert disk["sourceImage"].endswith(proxy["spec"]["placement"]["image"])
        metadata = {i["key"]: i["value"] for i in insert.body["metadata"]["items"]}
        assert metadata["user-data"] == proxy["spec"]["cloudInit"]["inline"]
        assert insert.body["machineType"].endswith(
            "/machineTypes/" + proxy["spec"]["placement"]["machineType"]
        )
        gone = dict(item, state="absent")
        assert run_playbook(tmp_path, [{"name": "delete", PI: gone}], module_defaults=defaults).rc == 0
    finally:
        fake.stop()
    assert fake.response_problems == []  # every answer fits the discovery document
