"""The health engine's probe against a real Squid with auth: the Secret's credentials pass, and a
407 is its own reason (``ProxyAuthRequired``), whether none were sent or they were refused."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid

import pytest
from contract import local_fixtures
from contract.suite import cleanup, dl, wait_for_state
from egress_proxies_controller.loops import proxy_probes
from proxy_traffic import origin_server

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth

pytestmark = pytest.mark.squid
backend = local_fixtures.backend  # the shared fixture

SENTINEL = "Sentinel-Probe-Pw"


@contextlib.contextmanager
def running(backend, req):
    """The instance of ``req`` Running on the local provider and a probe URL of a loopback
    origin: ``(ip, url)``; the instance is deleted after."""
    with cleanup(backend) as ids, origin_server() as origin:
        provider_id = backend.build().create(req, dl(backend))
        ids.append(provider_id)
        yield (
            wait_for_state(backend, provider_id, (contract.RUNNING,))[-1].ip,
            "http://%s:%d/probe" % tuple(origin),
        )


def test_probe_authenticates_and_reports_407_distinctly(backend):
    req = dataclasses.replace(backend.request(str(uuid.uuid4())), auth=Auth("crawler", SENTINEL))
    with running(backend, req) as (ip, url):
        right = proxy_probes.basic_header({"username": "crawler", "password": SENTINEL})
        wrong = proxy_probes.basic_header({"username": "crawler", "password": "nope"})

        ok = proxy_probes.probe(ip, req.port, 5.0, url, right)
        assert (ok.healthy, ok.reason) == (True, "Reachable")
        unsent = proxy_probes.probe(ip, req.port, 5.0, url)
        assert (unsent.healthy, unsent.reason) == (False, "ProxyAuthRequired")
        assert "none were sent" in unsent.message
        refused = proxy_probes.probe(ip, req.port, 5.0, url, wrong)
        assert (refused.healthy, refused.reason) == (False, "ProxyAuthRequired")
        assert "refused the credentials" in refused.message
        tcp_only = proxy_probes.probe(ip, req.port, 5.0)  # no URL: a connect needs no credentials
        assert tcp_only.healthy
        for result in (ok, unsent, refused):
            assert SENTINEL not in result.message and right.split()[1] not in result.message


def test_a_proxy_that_serves_without_credentials_is_auth_not_enforced(backend):
    """The probe also sends the GET without credentials: a proxy that serves it (here a Squid
    made without auth, as a guest whose own configuration ignored the auth part would be) is
    unhealthy, so a Proxy with ``spec.auth`` never stays Ready on an open proxy."""
    req = backend.request(str(uuid.uuid4()))  # no auth rendered: Squid serves anyone in range
    with running(backend, req) as (ip, url):
        header = proxy_probes.basic_header({"username": "crawler", "password": SENTINEL})
        open_proxy = proxy_probes.probe(ip, req.port, 5.0, url, header)
        assert (open_proxy.healthy, open_proxy.reason) == (False, "AuthNotEnforced")
        assert "without credentials answered 200" in open_proxy.message
        assert SENTINEL not in open_proxy.message
        assert proxy_probes.probe(ip, req.port, 5.0, url).healthy  # without auth asked: fine
