"""The monitoring component's scrape identity on the real API server: the token the API server
writes into its Secret (what the ServiceMonitor's ``authorization`` sends) reads a running
controller's authenticated ``/metrics``, and the scrape passes ``promtool check metrics``."""

from __future__ import annotations

import base64
import os

import pytest
from cluster import kube_testlib
from egress_proxies_controller.telemetry import metrics_auth
from kubernetes import client as k8s

from . import e2e_lib, kustomize_render, promtool, test_e2e

pytestmark = [pytest.mark.squid]

controller_api = e2e_lib.controller_api
METRICS_SERVICE = "egress-proxies-controller-metrics.egress-proxies-system.svc"


def scraper_token(admin) -> str:
    """The component's ServiceAccount, token Secret and binding applied; the token the API
    server's token controller wrote into the Secret the ServiceMonitor names."""
    objects = kustomize_render.render(os.path.join(e2e_lib.CONFIG, "monitoring"))
    e2e_lib.apply_all(admin, [o for o in objects if o["kind"] != "ServiceMonitor"])
    (monitor,) = [o for o in objects if o["kind"] == "ServiceMonitor"]
    credentials = monitor["spec"]["endpoints"][0]["authorization"]["credentials"]
    core = k8s.CoreV1Api(admin)

    def token():
        secret = core.read_namespaced_secret(credentials["name"], monitor["metadata"]["namespace"])
        return (secret.data or {}).get(credentials["key"])

    return base64.b64decode(kube_testlib.wait_for("the scraper's token", token, timeout=30)).decode()


def test_the_service_monitors_credentials_read_the_controllers_metrics(
    controller_api, kube_cluster, kube_namespace, tmp_path
):
    env = test_e2e.E2E(controller_api, kube_cluster, kube_namespace, tmp_path)
    env.controller.metrics_cert_dir = str(tmp_path / "metrics-tls")
    os.makedirs(env.controller.metrics_cert_dir)
    metrics_auth.self_signed(env.controller.metrics_cert_dir, [METRICS_SERVICE], ["127.0.0.1"])
    env.controller.metrics_token = scraper_token(controller_api)
    env.controller.start()
    try:
        env.controller.wait_ready()
        status, text = env.controller.metrics_request(env.controller.metrics_token)
        assert status == 200, text
        assert "egress_proxies_controller_build_info" in text
        promtool.check_metrics(text)
        assert env.controller.metrics_request("not-a-token")[0] == 401
    finally:
        env.cleanup()
