"""The controller end to end with a real guest: a ``Proxy`` on the kvm2 provider becomes Ready
on the test API server once the guest booted from the test image (tests/guest) reports its
address, Healthy once the health engine fetched a page through the guest's proxy, carries
traffic from the test's network namespace, and is deleted with its domain and volumes.

The health engine's HTTP probe GETs the namespace's HTTP server through the guest: the
controller (a root-namespace process) reaches the guest over the one transit route
``tests/guest/network.py`` sets up. Figures printed: create-to-Ready and Ready-to-Healthy.
"""

from __future__ import annotations

import base64
import json
import time
import uuid

import pytest
from contract import libvirt_fixtures
from contract.libvirt_backend import HOST_NAME
from guest import fixtures
from guest.network import in_dhcp_range
from kubernetes import client as k8s

from . import e2e_lib
from .e2e_lib import GROUP, PLURAL, VERSION, proxy_body, wait_condition, wait_proxy

pytestmark = [pytest.mark.libvirt]

controller_api = e2e_lib.controller_api
libvirt_host = libvirt_fixtures.libvirt_host
image_host = libvirt_fixtures.image_host
guest_image = fixtures.guest_image
guest_network = fixtures.guest_network
guest_backend = fixtures.guest_backend


def _controller(controller_api, kube_cluster, kube_namespace, tmp_path, guest_backend):
    """The controller on the kvm2 provider of the guest harness, probing through the guest."""
    kubeconfig = e2e_lib.service_account_kubeconfig(
        controller_api, kube_cluster, str(tmp_path / "kubeconfig")
    )
    providers = {
        "installation": guest_backend.installation,
        "providers": [{"name": "hv", "type": "kvm2", "kvm2": guest_backend.block()}],
    }
    controller = e2e_lib.ControllerProcess(
        str(tmp_path), kubeconfig, providers, kube_namespace, "lease-" + kube_namespace
    )
    controller.start(
        extra_args=[
            "--probe-url",
            guest_backend.network.marker_url,
            "--probe-interval",
            "2",
            "--probe-timeout",
            "5",
        ]
    )
    return controller


def test_real_guest_proxy_becomes_ready_healthy_and_is_deleted(
    controller_api, kube_cluster, kube_namespace, tmp_path, guest_backend
):
    network = guest_backend.network
    controller = _controller(controller_api, kube_cluster, kube_namespace, tmp_path, guest_backend)
    custom = k8s.CustomObjectsApi(controller_api)
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    try:
        controller.wait_ready()
        user_data = fixtures.user_data(extra="# %s" % sentinel)
        k8s.CoreV1Api(controller_api).create_namespaced_secret(
            kube_namespace,
            {
                "metadata": {"name": "guest-ci"},
                "data": {"user-data": base64.b64encode(user_data.encode()).decode()},
            },
        )
        spec = {
            "provider": "hv",
            "port": fixtures.PROXY_PORT,
            "placement": {"zone": HOST_NAME, "machineType": "small", "image": "guest"},
            "cloudInit": {"secretRef": {"name": "guest-ci", "key": "user-data"}},
        }
        started = time.monotonic()
        custom.create_namespaced_custom_object(GROUP, VERSION, kube_namespace, PLURAL, proxy_body("vm", spec))
        ready = wait_condition(custom, kube_namespace, "vm", "Ready", timeout=300, proc=controller)
        to_ready = time.monotonic() - started
        status = ready["status"]
        assert status["state"] == "Running" and in_dhcp_range(status["ip"]), status
        assert status["providerID"].startswith("hosts/%s/domains/proxy-" % HOST_NAME)
        healthy = wait_condition(custom, kube_namespace, "vm", "Healthy", timeout=120, proc=controller)
        to_healthy = time.monotonic() - started
        assert healthy["status"]["ip"] == status["ip"]
        assert network.http_log().count("GET /marker") >= 1  # the probe's GET went through the guest
        fetched = network.fetch_through(status["ip"], fixtures.PROXY_PORT)
        assert fetched.stdout == network.marker, fetched.stderr
        print(
            "controller, real guest: create-to-Ready %.1fs, create-to-Healthy %.1fs, ip %s"
            % (to_ready, to_healthy, status["ip"])
        )
        name = status["providerID"].rsplit("/", 1)[1]
        custom.delete_namespaced_custom_object(GROUP, VERSION, kube_namespace, PLURAL, "vm")
        wait_proxy(
            custom, kube_namespace, "vm", lambda o: o == "gone", "vm deleted", timeout=120, proc=controller
        )
        assert name not in [d.name() for d in guest_backend.host.direct().listAllDomains(0)]
        assert [v for v in guest_backend.host.volumes() if v.startswith(name + ".")] == []
        assert sentinel not in json.dumps(healthy) and sentinel not in controller.tail(100000)
    finally:
        rc = controller.stop()
    assert rc == 0, controller.tail()


def test_a_guest_that_serves_without_credentials_is_auth_not_enforced(
    controller_api, kube_cluster, kube_namespace, tmp_path, guest_backend
):
    """auth on kvm2 with a guest that does not run the collection's part (the test image has no
    cloud-init nor Squid: its tinyproxy serves anyone): the probe's GET without credentials is
    served, so the Proxy is Healthy=False AuthNotEnforced and never Ready."""
    controller = _controller(controller_api, kube_cluster, kube_namespace, tmp_path, guest_backend)
    custom = k8s.CustomObjectsApi(controller_api)
    password = "Sentinel-%s" % uuid.uuid4().hex
    try:
        controller.wait_ready()
        secret = {"username": "crawler", "password": password}
        k8s.CoreV1Api(controller_api).create_namespaced_secret(
            kube_namespace,
            {
                "metadata": {"name": "creds"},
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in secret.items()},
            },
        )
        spec = {
            "provider": "hv",
            "port": fixtures.PROXY_PORT,
            "placement": {"zone": HOST_NAME, "machineType": "small", "image": "guest"},
            "cloudInit": {"inline": fixtures.user_data()},
            "auth": {"secretRef": {"name": "creds"}},
        }
        started = time.monotonic()
        custom.create_namespaced_custom_object(
            GROUP, VERSION, kube_namespace, PLURAL, proxy_body("open", spec)
        )
        seen = wait_proxy(
            custom,
            kube_namespace,
            "open",
            lambda o: o != "gone" and e2e_lib.condition(o, "Healthy").get("reason") == "AuthNotEnforced",
            "AuthNotEnforced",
            timeout=300,
            proc=controller,
        )
        print(
            "controller, real guest with auth: create-to-AuthNotEnforced %.1fs" % (time.monotonic() - started)
        )
        assert seen["status"]["state"] == "Running"
        assert e2e_lib.condition(seen, "Ready")["status"] == "False"
        assert e2e_lib.condition(seen, "Ready")["reason"] == "Unhealthy"
        assert password not in json.dumps(seen) and password not in controller.tail(100000)
        custom.delete_namespaced_custom_object(GROUP, VERSION, kube_namespace, PLURAL, "open")
        wait_proxy(
            custom,
            kube_namespace,
            "open",
            lambda o: o == "gone",
            "open deleted",
            timeout=120,
            proc=controller,
        )
    finally:
        rc = controller.stop()
    assert rc == 0, controller.tail()
