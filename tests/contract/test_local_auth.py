"""Proxy authentication on the local provider, with real Squid and real traffic: the right
credentials pass, none or wrong ones get 407, a source outside the ranges is refused whatever it
sends; rotation rewrites the password file in place and the running Squid rereads it; the
cleartext password is nowhere on disk nor in the provider's log."""

from __future__ import annotations

import dataclasses
import http.client
import logging
import os
import pwd
import stat
import time
import uuid

import pytest
from proxy_traffic import fetch_via
from proxy_traffic import until as _until

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, squid_conf
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import process
from contract import local_fixtures
from contract.suite import cleanup, dl, wait_for_state

pytestmark = pytest.mark.squid
backend, origin = local_fixtures.backend, local_fixtures.origin  # the shared fixtures

SENTINEL = "Sentinel-Pw-7f3a9c"
ALLOWED, OUTSIDE = "127.0.0.2", "127.0.0.3"
# Squid rereads its configuration and restarts its helpers after SIGHUP: measured under 1 s.
RECONFIGURE_SLACK_SECONDS = 3.0


def _tree_text(directory: str) -> str:
    out = []
    for root, _dirs, files in os.walk(directory):
        for name in files:
            with open(os.path.join(root, name), "rb") as handle:
                out.append(handle.read().decode("utf-8", "replace"))
    return "\n".join(out)


def _running(backend, auth):
    provider = backend.build(allowed_source_ranges=["%s/32" % ALLOWED])
    req = dataclasses.replace(backend.request(str(uuid.uuid4())), auth=auth)
    provider_id = provider.create(req, dl(backend))
    running = wait_for_state(backend, provider_id, (contract.RUNNING,))[-1]
    return provider, req, provider_id, running


def test_credentials_required_and_ranges_still_enforced(backend, origin, caplog):
    caplog.set_level(logging.DEBUG)
    auth = Auth("crawler", SENTINEL)
    with cleanup(backend) as ids:
        _provider, req, provider_id, running = _running(backend, auth)
        ids.append(provider_id)
        ip, port = running.ip, req.port
        assert fetch_via(ip, port, origin, ALLOWED, ("crawler", SENTINEL)) == (200, "hello /via-proxy")
        assert fetch_via(ip, port, origin, ALLOWED)[0] == 407
        assert fetch_via(ip, port, origin, ALLOWED, ("crawler", SENTINEL + "x"))[0] == 407
        assert fetch_via(ip, port, origin, ALLOWED, ("someone", SENTINEL))[0] == 407
        assert fetch_via(ip, port, origin, OUTSIDE, ("crawler", SENTINEL))[0] == 403
        assert fetch_via(ip, port, origin, OUTSIDE)[0] == 403  # refused, not even challenged

        directory = backend.instance_dir(provider_id)
        passwd = os.path.join(directory, "passwd")
        info = os.stat(passwd)
        if os.geteuid() == 0:  # root's file, readable by the proxy group whose helper reads it
            assert stat.S_IMODE(info.st_mode) == 0o640
            assert (info.st_uid, info.st_gid) == (0, pwd.getpwnam("proxy").pw_gid)
        else:
            assert stat.S_IMODE(info.st_mode) == 0o600
        with open(passwd, encoding="utf-8") as handle:
            assert handle.read().startswith("crawler:$6$")
        assert SENTINEL not in _tree_text(directory)
        assert SENTINEL not in caplog.text
        assert SENTINEL not in repr(req) and req.describe()["auth"] is True


def test_rotation_is_in_place_and_the_old_password_stops_working(backend, origin):
    old, new = Auth("crawler", SENTINEL), Auth("crawler", "Rotated-" + SENTINEL)
    with cleanup(backend) as ids:
        provider, req, provider_id, running = _running(backend, old)
        ids.append(provider_id)
        ip, port = running.ip, req.port
        directory = backend.instance_dir(provider_id)
        pid_before = process.status(directory)[1]
        assert fetch_via(ip, port, origin, ALLOWED, ("crawler", old.password))[0] == 200

        assert provider.sync_auth(provider_id, new, Deadline(10), apply=False) is True
        assert fetch_via(ip, port, origin, ALLOWED, ("crawler", old.password))[0] == 200  # dry run
        assert provider.sync_auth(provider_id, new, Deadline(10)) is True
        _until(
            "the new password accepted",
            lambda: fetch_via(ip, port, origin, ALLOWED, ("crawler", new.password))[0] == 200,
        )
        assert fetch_via(ip, port, origin, ALLOWED, ("crawler", old.password))[0] == 407
        assert process.status(directory) == (process.ALIVE, pid_before), "rotated in place"
        assert provider.sync_auth(provider_id, new, Deadline(10)) is False  # nothing to do twice

        assert provider.sync_auth(provider_id, None, Deadline(10)) is True  # auth removed
        _until("no credentials needed", lambda: fetch_via(ip, port, origin, ALLOWED)[0] == 200)
        assert fetch_via(ip, port, origin, OUTSIDE)[0] == 403
        assert not os.path.exists(os.path.join(directory, "passwd"))
        assert SENTINEL not in _tree_text(directory)


def test_stopped_instance_restarts_with_the_requested_credentials(backend, origin):
    old, new = Auth("crawler", SENTINEL), Auth("other", "Second-" + SENTINEL)
    with cleanup(backend) as ids:
        provider, req, provider_id, _running_instance = _running(backend, old)
        ids.append(provider_id)
        directory = backend.instance_dir(provider_id)
        process.stop(directory, req.name, Deadline(10))
        wait_for_state(backend, provider_id, (contract.STOPPED,))
        provider.create(dataclasses.replace(req, auth=new), dl(backend))
        running = wait_for_state(backend, provider_id, (contract.RUNNING,))[-1]
        assert fetch_via(running.ip, req.port, origin, ALLOWED, ("other", new.password))[0] == 200
        assert fetch_via(running.ip, req.port, origin, ALLOWED, ("crawler", old.password))[0] == 407


def _old_password_refused_after(ip, port, origin, password, limit: float) -> float:
    """Seconds until ``password`` is refused (407) on a NEW connection, polled on fresh
    connections only (never with the new password, which would replace Squid's cached entry
    and hide the old one's cache); ``limit`` + 1 when it was still accepted at ``limit``."""
    started = time.monotonic()
    while time.monotonic() - started <= limit:
        try:
            if fetch_via(ip, port, origin, ALLOWED, ("crawler", password))[0] == 407:
                return time.monotonic() - started
        except (ConnectionError, http.client.HTTPException):
            pass  # Squid's reconfigure closes and reopens its port
        time.sleep(0.2)
    return limit + 1


def test_old_password_refused_on_new_connections_within_the_documented_bound(backend, origin):
    """Issue 40 §6: after a rotation Squid's credentials cache kept the old password opening
    new connections for about 70 s. The bound is now squid_conf.AUTH_TTL_SECONDS (plus the
    reconfigure), measured here on a real Squid whose cache holds the old password."""
    old, new = Auth("crawler", SENTINEL), Auth("crawler", "Rotated-" + SENTINEL)
    with cleanup(backend) as ids:
        provider, req, provider_id, running = _running(backend, old)
        ids.append(provider_id)
        ip, port = running.ip, req.port
        for _attempt in range(3):  # cached as checked, as a busy client's would be
            assert fetch_via(ip, port, origin, ALLOWED, ("crawler", old.password))[0] == 200
        assert provider.sync_auth(provider_id, new, Deadline(10)) is True
        bound = squid_conf.AUTH_TTL_SECONDS + RECONFIGURE_SLACK_SECONDS
        took = _old_password_refused_after(ip, port, origin, old.password, bound)
        print("old password refused on a new connection %.1fs after the rotation" % took)
        assert took <= bound, "the old password still opened new connections %.0fs after the rotation" % bound
        assert fetch_via(ip, port, origin, ALLOWED, ("crawler", new.password))[0] == 200
