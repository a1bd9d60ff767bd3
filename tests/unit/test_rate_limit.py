"""The per-provider rate limit (issue 18): parsed with the field named, one bucket shared by
every process of an installation on the host, and a call that cannot have a token before its
deadline fails transient without reaching the backend."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors, rate_limit
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe
from unit.test_observe import Scripted


def entry(limit) -> dict:
    return {"providers": [{"name": "loc", "type": "local", "rateLimit": limit}]}


@pytest.mark.parametrize(
    "limit, fragment",
    [
        ("10/s", "providers[0].rateLimit: must be a mapping"),
        ({}, "providers[0].rateLimit.callsPerSecond: required"),
        ({"callsPerSecond": 0}, "providers[0].rateLimit.callsPerSecond"),
        ({"callsPerSecond": -3}, "providers[0].rateLimit.callsPerSecond"),
        ({"callsPerSecond": "10"}, "providers[0].rateLimit.callsPerSecond"),
        ({"callsPerSecond": True}, "providers[0].rateLimit.callsPerSecond"),
        ({"callsPerSecond": float("nan")}, "providers[0].rateLimit.callsPerSecond"),
        ({"callsPerSecond": float("inf")}, "providers[0].rateLimit.callsPerSecond"),
        ({"callsPerSecond": 5, "burst": 0}, "providers[0].rateLimit.burst"),
        ({"callsPerSecond": 5, "burst": 2.5}, "providers[0].rateLimit.burst"),
        ({"callsPerSecond": 5, "qps": 3}, "providers[0].rateLimit.qps: unknown field"),
    ],
)
def test_a_bad_rate_limit_is_refused_naming_the_field(limit, fragment):
    with pytest.raises(ConfigError) as info:
        config.parse(entry(limit))
    assert any(fragment in p for p in info.value.problems), info.value.problems


def test_a_rate_limit_is_parsed_with_burst_defaulting_to_the_rate():
    (spec,) = config.parse(entry({"callsPerSecond": 2.5})).providers
    assert spec.rate_limit == rate_limit.RateLimit(2.5, 2)
    (spec,) = config.parse(entry({"callsPerSecond": 0.2, "burst": 4})).providers
    assert spec.rate_limit == rate_limit.RateLimit(0.2, 4)
    (spec,) = config.parse({"providers": [{"name": "loc", "type": "local"}]}).providers
    assert spec.rate_limit is None


def _take_for(directory: str, seconds: float, out) -> None:
    bucket = rate_limit.SharedTokenBucket(rate_limit.RateLimit(20.0, 5), "inst", "p", directory)
    end, taken = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        if bucket._take() == 0.0:
            taken += 1
    out.put(taken)


def test_processes_share_one_bucket_and_never_exceed_it(tmp_path):
    """Three processes hammering one bucket (20/s, burst 5) for 1.5 s get at most what the
    bucket allows in that time, together (load only lowers the count)."""
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    started = time.monotonic()
    procs = [ctx.Process(target=_take_for, args=(str(tmp_path), 1.5, out)) for _proc in range(3)]
    for proc in procs:
        proc.start()
    taken = [out.get(timeout=30) for _proc in procs]
    for proc in procs:
        proc.join(10)
    elapsed = time.monotonic() - started
    assert sum(taken) >= 5  # the burst at least
    assert sum(taken) <= 5 + 20.0 * elapsed + 1, (taken, elapsed)


def test_no_token_before_the_deadline_is_transient_and_the_backend_is_not_called(tmp_path):
    inner = Scripted("slow-api")
    calls = []
    inner.get = lambda provider_id, deadline: calls.append(provider_id) or "answer"
    telemetry = observe.Telemetry()
    bucket = rate_limit.SharedTokenBucket(rate_limit.RateLimit(0.1, 1), "inst", "slow-api", str(tmp_path))
    wrapped = observe.observed(inner, telemetry, bucket)
    assert wrapped.get("scripted/a", Deadline(5)) == "answer"
    started = time.monotonic()
    with pytest.raises(errors.ProviderError) as info:
        wrapped.get("scripted/b", Deadline(0.5))
    assert time.monotonic() - started < 5  # it gave up at once: the wait (10 s) exceeds the deadline
    assert info.value.error_class == errors.TRANSIENT
    assert "rate limit 0.1 calls/s (burst 1) of provider 'slow-api'" in str(info.value)
    assert calls == ["scripted/a"]
    assert [r["class"] for r in telemetry.records()] == ["ok", "transient"]


def test_a_call_waits_for_its_token_within_the_deadline(tmp_path):
    bucket = rate_limit.SharedTokenBucket(rate_limit.RateLimit(5.0, 1), "inst", "p", str(tmp_path))
    assert bucket.acquire("get", Deadline(5)) < 0.1
    waited = bucket.acquire("get", Deadline(5))
    assert waited > 0.1  # the second token comes 0.2 s after the first


def test_installations_and_providers_have_buckets_of_their_own(tmp_path):
    limit = rate_limit.RateLimit(0.01, 1)
    paths = {
        rate_limit.SharedTokenBucket(limit, inst, name, str(tmp_path)).path
        for inst, name in (("a", "p"), ("b", "p"), ("a", "q"))
    }
    assert len(paths) == 3


def test_a_directory_that_is_not_private_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    monkeypatch.setenv(rate_limit.ENV_DIR, str(shared))
    with pytest.raises(OSError, match="not a private directory"):
        rate_limit.bucket_dir()
    link = tmp_path / "link"
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    link.symlink_to(private)
    monkeypatch.setenv(rate_limit.ENV_DIR, str(link))
    with pytest.raises(OSError, match="not a private directory"):
        rate_limit.bucket_dir()
    bucket = rate_limit.SharedTokenBucket(rate_limit.RateLimit(1.0, 1), "inst", "p")  # made, not used
    with pytest.raises(errors.ProviderError, match="not a private directory") as info:
        bucket.acquire("create", Deadline(5))
    assert info.value.error_class == errors.PERMANENT
    monkeypatch.setenv(rate_limit.ENV_DIR, str(tmp_path / "fresh"))
    assert oct(os.stat(rate_limit.bucket_dir()).st_mode & 0o777) == "0o700"


def test_every_backend_call_of_the_wrapper_takes_a_token_sync_auth_included(tmp_path):
    """sync_auth's last argument is not its deadline: the wrapper must still bound the wait by it."""
    inner = Scripted("p")
    inner.supports_auth = True
    inner.sync_auth = lambda provider_id, auth, deadline, apply=True: "synced"
    bucket = rate_limit.SharedTokenBucket(rate_limit.RateLimit(0.1, 1), "inst", "p", str(tmp_path))
    wrapped = observe.observed(inner, observe.Telemetry(), bucket)
    assert wrapped.sync_auth("scripted/a", {"username": "u"}, Deadline(5)) == "synced"
    with pytest.raises(errors.ProviderError, match="no call slot before the deadline"):
        wrapped.sync_auth("scripted/a", {"username": "u"}, Deadline(0.5), apply=False)
