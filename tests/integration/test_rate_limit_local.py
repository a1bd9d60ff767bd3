"""The providers file's ``rateLimit`` through real ``ansible-playbook`` runs (issue 18): two
module processes share one bucket, and a call with no token before its deadline fails
transient, naming the limit, without touching the backend."""

from __future__ import annotations

import os

import pytest

from .playbook import run_playbook

pytestmark = [pytest.mark.playbook]

INFO = "crawl.egress_proxies.proxy_info"


def test_two_module_processes_share_the_providers_rate_limit(tmp_path, local):
    limited = dict(
        local, providers=[dict(local["providers"][0], rateLimit={"callsPerSecond": 0.05, "burst": 3})]
    )
    ids = ["local/proxy-ratelimit%d" % i for i in range(4)]
    tasks = [
        {"name": "first process", INFO: {"provider": "local", "ids": ids[:2], "timeout": 2}},
        {
            "name": "second process",
            INFO: {"provider": "local", "ids": ids[2:], "timeout": 2},
            "ignore_errors": True,
        },
    ]
    bucket_dir = tmp_path / "rate-limit"
    run = run_playbook(
        tmp_path, tasks, module_defaults=limited, env={"EGRESS_PROXIES_RATE_LIMIT_DIR": str(bucket_dir)}
    )
    first, second = run["first process"], run["second process"]
    assert first.get("failed") is not True, first
    assert sorted(first["not_found"]) == ids[:2]
    # The third token went to one of the second process's two gets (they run concurrently, so
    # either); the other found none within its 2 s deadline (the next comes in 20 s) and was
    # never sent.
    assert len(second["not_found"]) == 1 and second["not_found"][0] in ids[2:], second
    assert [e["id"] for e in second["errors"]] == sorted(set(ids[2:]) - set(second["not_found"])), second
    text = str(second)
    assert "rate limit 0.05 calls/s (burst 3) of provider 'local'" in text
    assert "transient" in text
    assert sorted(r["class"] for r in second["telemetry"]) == ["not_found", "transient"]
    assert len(os.listdir(bucket_dir)) == 1  # one bucket for the provider, shared
