"""A rotated Secret on a provider whose credentials are fixed at creation (gcp): the real
controller on the real test API server, the real google-cloud-compute client against the local
fake Compute API. The poll's Permanent CredentialsFixedAtCreation replaces the instance (the old
one deleted, then exactly one new one with the new credentials' hash in its user-data, never two
at once) with an Event and conditions saying why, instead of latching PermanentError."""

from __future__ import annotations

import base64
import threading
import time
import uuid

import pytest
from fakes.gcp import FakeCompute
from fakes.gcp.model import Timing
from kubernetes import client as k8s

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import cloud_init_auth, proxy_auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert

from . import e2e_lib, test_e2e
from .e2e_lib import condition

pytestmark = [pytest.mark.playbook]  # the controller runs the modules through ansible-runner

controller_api = e2e_lib.controller_api
ZONE = "us-central1-a"
PLACEMENT = {
    "zone": ZONE,
    "machineType": "e2-small",
    "image": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
}


@pytest.fixture
def fake():
    """Set up before the controller, torn down after it (its cleanup deletes through it)."""
    with FakeCompute(
        "fake-project", timing=Timing(provisioning=0.3, staging=0.3, operation=0.4, deletion=0.4)
    ) as server:
        yield server


@pytest.fixture
def e2e(fake, controller_api, kube_cluster, kube_namespace, tmp_path):
    env = test_e2e.E2E(controller_api, kube_cluster, kube_namespace, tmp_path)
    env.providers["providers"].append(
        {"name": "gcp", "type": "gcp", "gcp": {"project": "fake-project", "apiEndpoint": fake.endpoint}}
    )
    env.controller.write_providers(env.providers)
    # No probes: nothing listens on the addresses the fake hands out (no VM boots).
    env.controller.start(extra_args=["--probe-interval", "0"])
    env.controller.wait_ready()
    try:
        yield env
    finally:
        env.cleanup()


def _secret(username: str, password: str) -> dict:
    return {
        "username": base64.b64encode(username.encode()).decode(),
        "password": base64.b64encode(password.encode()).decode(),
    }


def _records(fake) -> list:
    with fake.state.lock:
        return [dict(r["body"]) for r in fake.state.instances.values()]


def test_a_rotated_secret_replaces_a_gcp_instance_exactly_once(e2e, fake):
    first, second = "First-%s" % uuid.uuid4().hex, "Second-%s" % uuid.uuid4().hex
    core = k8s.CoreV1Api(e2e.admin)
    core.create_namespaced_secret(
        e2e.namespace, {"metadata": {"name": "creds"}, "data": _secret("crawler", first)}
    )
    spec = {
        "provider": "gcp",
        "placement": PLACEMENT,
        "cloudInit": {"inline": "#cloud-config\npackages: [squid]\n"},
        "auth": {"secretRef": {"name": "creds"}},
    }
    e2e.create("gauth", spec)
    t0 = time.monotonic()
    ready = e2e.wait_ready("gauth", timeout=240)  # bounded waits, generous: runs slow on a shared machine
    print("gcp Proxy with auth Ready after %.2fs" % (time.monotonic() - t0))
    (old,) = _records(fake)
    assert proxy_auth.Auth("crawler", first).matches(cloud_init_auth.passwd_of(insert.user_data_of(old)))

    most, stop = [0], threading.Event()

    def sample():  # never two instances at once, sampled while the replacement runs
        while not stop.is_set():
            most[0] = max(most[0], len(_records(fake)))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    fake.reset_log()
    started = time.monotonic()
    core.patch_namespaced_secret("creds", e2e.namespace, {"data": _secret("crawler", second)})
    try:
        replaced = e2e.wait(
            "gauth",
            lambda o: (
                o != "gone"
                and condition(o, "Ready").get("status") == "True"
                and [r["id"] for r in _records(fake)] not in ([], [old["id"]])
            ),
            "the replacement Ready",
            timeout=240,
        )
    finally:
        stop.set()
        sampler.join(5)
    print("credentials replacement on the gcp fake: Ready again after %.2fs" % (time.monotonic() - started))
    assert most[0] == 1, "two instances existed at once"
    (new,) = _records(fake)
    line = cloud_init_auth.passwd_of(insert.user_data_of(new))
    assert proxy_auth.Auth("crawler", second).matches(line)
    assert not proxy_auth.Auth("crawler", first).matches(line)
    instance_calls = fake.log(path=r"^zones/[^/]+/instances(/[^/]+)?$")
    calls = [r.method for r in instance_calls if r.method in ("POST", "DELETE")]
    assert calls == ["DELETE", "POST"], calls  # the old one deleted first, one insert after
    assert replaced["status"]["providerID"] == ready["status"]["providerID"]  # same name, reused
    assert condition(replaced, "PermanentError").get("status") != "True"
    assert condition(replaced, "CredentialsApplied")["status"] == "True"
    events = e2e.events("gauth")
    changed = [m for r, m in events if r == "CredentialsChanged"]
    assert len(changed) == 1 and "creds" in changed[0] and "fixes them at creation" in changed[0], events
    items = (
        k8s.CoreV1Api(e2e.admin)
        .list_namespaced_event(e2e.namespace, field_selector="involvedObject.name=gauth")
        .items
    )
    assert sum(e.count or 1 for e in items if e.reason == "Created") == 2  # the recorder aggregates
    for text in (str(events), str(replaced), e2e.controller.tail(100000)):
        assert first not in text and second not in text
    e2e.delete("gauth")
    e2e.wait_gone("gauth")
    assert _records(fake) == []
