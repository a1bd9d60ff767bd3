"""A ``.new-proxy-*`` staging directory left by a SIGKILLed create is cleaned up (issue 28 §7):
by ``proxy_gc`` and by the next create on that stateDir, through real runs (real Squid)."""

from __future__ import annotations

import pytest

from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
GC = "crawl.egress_proxies.proxy_gc"


def _plant(tmp_path, name: str):
    """What a create killed between mkdtemp and the rename leaves: a half-written staging dir."""
    staging = tmp_path / "state" / "instances" / name
    staging.mkdir(parents=True)
    (staging / "squid.conf").write_text("http_port 127.0.0.1:3128\n")
    return staging


def test_proxy_gc_removes_a_killed_creates_staging_directory(tmp_path, local):
    staging = _plant(tmp_path, ".new-proxy-killed-abc123")
    check = run_playbook(
        tmp_path, [{"name": "gc", GC: {"live_uids": [], "min_age": "1h"}}], module_defaults=local, check=True
    )
    assert check.rc == 0, check.stdout[-3000:]
    assert staging.exists(), "check mode changes nothing"
    run = run_playbook(
        tmp_path, [{"name": "gc", GC: {"live_uids": [], "min_age": "1h"}}], module_defaults=local
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert not staging.exists()


def test_the_next_create_removes_a_killed_creates_staging_directory(tmp_path, local):
    staging = _plant(tmp_path, ".new-proxy-killed-def456")
    run = run_playbook(
        tmp_path, [{"name": "make", PI: {"provider": "local", "uid": "after-kill"}}], module_defaults=local
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert not staging.exists()
