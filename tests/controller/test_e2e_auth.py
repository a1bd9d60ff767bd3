"""spec.auth.secretRef end to end: the real controller on the real test API server, the local
provider's real Squid and real traffic. A missing Secret is a retried condition (no latch, no
instance); once it exists the proxy is Ready, probed with its credentials; the right ones pass,
none or wrong ones get 407, a source outside the ranges 403; rotating the Secret's content
rotates the instance in place; a Secret the module would refuse makes the probe's 407 visible as
its own reason; and no password reaches the Proxy, its Events, the controller's log or any file
the controller wrote."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid

import pytest
from kubernetes import client as k8s
from proxy_traffic import fetch_via, origin_server, until

from . import e2e_lib, test_e2e
from .e2e_lib import condition

pytestmark = [pytest.mark.squid]

controller_api = e2e_lib.controller_api
e2e = test_e2e.e2e  # the fixture: a controller on the test API server

IN_RANGE, OUT_OF_RANGE = "127.0.0.2", "127.0.0.3"


def _secret(username: str, password: str) -> dict:
    return {
        "username": base64.b64encode(username.encode()).decode(),
        "password": base64.b64encode(password.encode()).decode(),
    }


def test_auth_from_a_secret_end_to_end(e2e):
    first, second = "Sentinel-%s" % uuid.uuid4().hex, "Rotated-%s" % uuid.uuid4().hex
    core = k8s.CoreV1Api(e2e.admin)
    with origin_server() as origin:
        # The probe connects from 127.0.0.1; the test's clients from 127.0.0.2 (in) and .3 (out).
        e2e.providers["providers"][0]["local"]["allowedSourceRanges"] = ["127.0.0.1/32", "%s/32" % IN_RANGE]
        e2e.controller.stop()
        e2e.controller.write_providers(e2e.providers)
        e2e.controller.start(extra_args=["--probe-url", "http://127.0.0.1:%d/probe" % origin[1]])
        e2e.controller.wait_ready()

        e2e.create("authp", {"provider": "local", "auth": {"secretRef": {"name": "creds"}}})
        missing = e2e.wait(
            "authp",
            lambda o: o != "gone" and condition(o, "CredentialsApplied").get("reason") == "SecretUnavailable",
            "missing Secret reported",
        )
        assert condition(missing, "Ready")["reason"] == "SecretUnavailable"
        assert "creds" in condition(missing, "CredentialsApplied")["message"]
        assert condition(missing, "PermanentError").get("status") != "True"  # retried, never latched
        assert e2e.instances() == []

        core.create_namespaced_secret(
            e2e.namespace, {"metadata": {"name": "creds"}, "data": _secret("crawler", first)}
        )
        ready = e2e.wait(
            "authp",
            lambda o: (
                o != "gone"
                and condition(o, "Ready").get("status") == "True"
                and condition(o, "Healthy").get("reason") == "Reachable"
            ),
            "Ready and probed with its credentials",
        )
        assert condition(ready, "CredentialsApplied")["status"] == "True"
        ip, provider_id = ready["status"]["ip"], ready["status"]["providerID"]
        assert fetch_via(ip, 3128, origin, IN_RANGE, ("crawler", first)) == (200, "hello /via-proxy")
        assert fetch_via(ip, 3128, origin, IN_RANGE)[0] == 407
        assert fetch_via(ip, 3128, origin, IN_RANGE, ("crawler", "wrong"))[0] == 407
        assert fetch_via(ip, 3128, origin, OUT_OF_RANGE, ("crawler", first))[0] == 403

        core.patch_namespaced_secret("creds", e2e.namespace, {"data": _secret("crawler", second)})
        until(
            "the rotated password accepted",
            lambda: fetch_via(ip, 3128, origin, IN_RANGE, ("crawler", second))[0] == 200,
            60,
        )
        assert fetch_via(ip, 3128, origin, IN_RANGE, ("crawler", first))[0] == 407
        rotated = e2e.custom.get_namespaced_custom_object(
            e2e_lib.GROUP, e2e_lib.VERSION, e2e.namespace, e2e_lib.PLURAL, "authp"
        )
        assert (rotated["status"]["providerID"], rotated["status"]["ip"]) == (provider_id, ip), "in place"
        until(
            "the rotation's Event", lambda: "CredentialsRotated" in [r for r, _m in e2e.events("authp")], 60
        )

        # Content the module would refuse: reported, the instance keeps its last credentials,
        # and the probe (sent without any) sees the 407 as its own reason.
        core.patch_namespaced_secret("creds", e2e.namespace, {"data": _secret("bad:name", second)})
        broken = e2e.wait(
            "authp",
            lambda o: (
                o != "gone"
                and condition(o, "CredentialsApplied").get("reason") == "SecretUnavailable"
                and condition(o, "Healthy").get("reason") == "ProxyAuthRequired"
            ),
            "refused Secret content and the probe's 407",
        )
        assert "contains ':'" in condition(broken, "CredentialsApplied")["message"]
        assert fetch_via(ip, 3128, origin, IN_RANGE, ("crawler", second))[0] == 200

        everything = json.dumps(broken) + json.dumps(e2e.events("authp")) + e2e.controller.tail(100000)
        for secret in (first, second):
            assert secret not in everything
            found = subprocess.run(
                ["grep", "-rl", secret, e2e.controller.workdir], capture_output=True, text=True, check=False
            )
            assert found.stdout == "", "password found in %s" % found.stdout
        e2e.delete("authp")
        e2e.wait_gone("authp")
    assert e2e.instances() == []
