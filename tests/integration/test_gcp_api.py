"""The gcp provider with the real google-cloud-compute client against the fake Compute Engine API.

What only the wire shows: the exact calls of a lifecycle, that Check is one request with
``maxResults=1``, that a list of 100 instances is one request, the query parameters the SDK
really sends (filter, returnPartialSuccess), asynchronous insert failures read back from their
operations, injected 429 / 403 quota / 5xx / slow answers, a partial aggregated list, a delete
that is not resubmitted while it runs, and the managed firewall rule.
"""

from __future__ import annotations

import time
import uuid

import pytest
from contract.gcp_backend import ZONE, GcpBackend

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert, labels
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import (
    provider as gcp_provider,
)


@pytest.fixture
def gcp():
    harness = GcpBackend()
    try:
        yield harness
    finally:
        harness.teardown()


def calls(fake) -> list:
    return ["%s %s" % (r.method, r.path) for r in fake.log()]


def wait_running(provider, provider_id, timeout=15.0) -> list:
    seen = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        instance = provider.get(provider_id, Deadline(10))
        seen.append(instance.state)
        if instance.state == contract.RUNNING:
            return seen
        time.sleep(0.05)
    pytest.fail("not Running: %s" % seen)


def error_of(call) -> errors.ProviderError:
    with pytest.raises(errors.ProviderError) as exc_info:
        call()
    return exc_info.value


def test_full_lifecycle_and_its_api_calls(gcp):
    provider, fake = gcp.provider, gcp.fake
    req = gcp.request(str(uuid.uuid4()), cloud_init="#cloud-config\npackages: [squid]\n")
    path = "zones/%s/instances/%s" % (ZONE, req.name)

    provider_id = provider.create(req, Deadline(10))
    assert provider_id == path
    assert calls(fake) == ["POST zones/%s/instances" % ZONE]  # submitted, not awaited
    sent = fake.log()[0].body
    assert sent["labels"] == labels.marks(req.uid, gcp.installation, provider.name)
    assert {"key": "user-data", "value": req.cloud_init} in sent["metadata"]["items"]

    states = wait_running(provider, provider_id)
    assert states[0] == contract.PROVISIONING and states[-1] == contract.RUNNING
    running = provider.get(provider_id, Deadline(10))
    assert running.ip.startswith("127.203.")  # the fake's NAT range: loopback only
    assert running.uid == req.uid and running.installation == gcp.installation
    assert calls(fake)[1:] == ["GET " + path] * (len(states) + 1)

    (listed,) = [i for i in provider.list_by_tag(Deadline(10)) if i.id == provider_id]
    assert listed.state == contract.RUNNING and listed.ip == running.ip

    fake.reset_log()
    provider.delete(provider_id, Deadline(10))
    # the operations (a delete running?), the marks (ours?), the delete
    assert calls(fake) == ["GET zones/%s/operations" % ZONE, "GET " + path, "DELETE " + path]
    assert fake.log()[0].query["filter"] == ['targetLink eq ".*/zones/%s/instances/%s"' % (ZONE, req.name)]
    assert provider.get(provider_id, Deadline(10)).state == contract.STOPPED  # STOPPING while deleting
    end = time.monotonic() + 10
    while True:
        try:
            provider.get(provider_id, Deadline(10))
        except errors.ProviderError as exc:
            assert errors.class_of(exc) == errors.NOT_FOUND
            break
        assert time.monotonic() < end
        time.sleep(0.05)
    assert gcp.leftovers(provider_id) == []


def test_delete_is_not_resubmitted_while_running(gcp):
    provider, fake = gcp.provider, gcp.fake
    provider_id = provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    for _index in range(3):
        provider.delete(provider_id, Deadline(10))
    assert len(fake.log("DELETE", r"/instances/")) == 1
    assert len([op for op in fake.state.operations.values() if op["operationType"] == "delete"]) == 1


def test_check_is_exactly_one_request_with_max_results_1(gcp):
    fake = gcp.fake
    gcp.provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    fake.reset_log()
    (status,) = gcp.provider.check(Deadline(10))
    assert status.ready and status.reason == contract.REASON_REACHABLE
    (request,) = fake.log()
    assert (request.method, request.path) == ("GET", "aggregated/instances")
    assert request.query["maxResults"] == ["1"]
    assert request.query["returnPartialSuccess"] == ["true"]
    assert request.query["filter"] == [labels.list_filter(gcp.installation)]
    assert "quota" not in status.details  # no regions configured: no extra request


def test_check_without_instances_is_one_request_and_reports_quota_of_configured_regions():
    harness = GcpBackend(regions=["europe-west1"])
    try:
        (status,) = harness.provider.check(Deadline(10))
        assert [r.path for r in harness.fake.log()] == ["aggregated/instances", "regions/europe-west1"]
        assert status.details["quota"]["europe-west1"]["INSTANCES"] == {
            "limit": 24.0,
            "usage": 0.0,
            "headroom": 24.0,
        }
    finally:
        harness.teardown()


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (401, "", contract.REASON_UNAUTHORIZED),
        (403, "forbidden", contract.REASON_FORBIDDEN),
        (500, "", contract.REASON_API_ERROR),
    ],
)
def test_check_failures_over_http(gcp, status, reason, expected):
    gcp.fake.inject(status, reason=reason, message="denied" if reason else "", path="^aggregated/", times=1)
    (result,) = gcp.provider.check(Deadline(10))
    assert (result.ready, result.reason) == (False, expected)


def test_check_unreachable_endpoint():
    harness = GcpBackend()
    harness.fake.stop()  # the provider keeps pointing at the now closed port
    try:
        (status,) = harness.provider.check(Deadline(10))
        assert (status.ready, status.reason) == (False, contract.REASON_UNREACHABLE)
    finally:
        harness.teardown()


def test_list_of_100_instances_is_one_request(gcp):
    provider, fake = gcp.provider, gcp.fake
    fake.state.quotas["us-central1"].update(INSTANCES=200.0, CPUS=400.0, IN_USE_ADDRESSES=200.0)
    for _index in range(100):
        provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    fake.reset_log()
    assert len(provider.list_by_tag(Deadline(10))) == 100
    assert calls(fake) == ["GET aggregated/instances"]


def test_list_pages_through_the_aggregated_list(gcp, monkeypatch):
    provider, fake = gcp.provider, gcp.fake
    for _index in range(7):
        provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    monkeypatch.setattr(gcp_provider, "LIST_PAGE_SIZE", 3)
    fake.reset_log()
    assert len({i.id for i in provider.list_by_tag(Deadline(10))}) == 7
    assert [r.query.get("pageToken") for r in fake.log()] == [None, ["3"], ["6"]]


def test_partial_aggregated_list_leaves_out_the_unreachable_zone(gcp):
    provider, fake = gcp.provider, gcp.fake
    near = provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    far = provider.create(
        gcp.request(str(uuid.uuid4()), zone="europe-west1-b", region="europe-west1"), Deadline(10)
    )
    assert {near, far} <= {i.id for i in provider.list_by_tag(Deadline(10))}
    fake.state.unreachable.add("europe-west1-b")
    assert {i.id for i in provider.list_by_tag(Deadline(10))} == {near}


def test_async_quota_failure_is_read_back_then_forgotten_by_delete(gcp):
    provider, fake = gcp.provider, gcp.fake
    fake.state.quotas["us-central1"]["INSTANCES"] = 1.0
    provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    second = gcp.request(str(uuid.uuid4()))
    provider_id = provider.create(second, Deadline(10))  # accepted: the failure comes later
    first_seen = errors.class_of(error_of(lambda: provider.get(provider_id, Deadline(10))))
    assert first_seen in (errors.TRANSIENT, errors.QUOTA_EXCEEDED)  # pending, or already failed
    time.sleep(fake.state.timing.operation + 0.1)
    exc = error_of(lambda: provider.get(provider_id, Deadline(10)))
    assert errors.class_of(exc) == errors.QUOTA_EXCEEDED
    assert "Quota 'INSTANCES' exceeded" in str(exc)
    provider.delete(provider_id, Deadline(10))
    assert errors.class_of(error_of(lambda: provider.get(provider_id, Deadline(10)))) == errors.NOT_FOUND


@pytest.mark.parametrize(
    ("placement", "code"),
    [
        ({"image": "projects/nope/global/images/family/none"}, "RESOURCE_NOT_FOUND"),
        ({"machine_type": "e2-huge"}, "INVALID_FIELD_VALUE"),
    ],
)
def test_async_bad_image_or_machine_type_is_permanent(gcp, placement, code):
    provider, fake = gcp.provider, gcp.fake
    provider_id = provider.create(gcp.request(str(uuid.uuid4()), **placement), Deadline(10))
    time.sleep(fake.state.timing.operation + 0.1)
    exc = error_of(lambda: provider.get(provider_id, Deadline(10)))
    assert errors.class_of(exc) == errors.PERMANENT and code in str(exc)


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (429, "rateLimitExceeded", errors.QUOTA_EXCEEDED),
        (403, "quotaExceeded", errors.QUOTA_EXCEEDED),
        (403, "rateLimitExceeded", errors.QUOTA_EXCEEDED),
        (403, "forbidden", errors.PERMANENT),
        (400, "invalid", errors.PERMANENT),
        (401, "required", errors.PERMANENT),
        (500, "backendError", errors.TRANSIENT),
        (503, "backendError", errors.TRANSIENT),
    ],
)
def test_injected_http_errors_are_classified_for_every_op(gcp, status, reason, expected):
    provider, fake = gcp.provider, gcp.fake
    provider_id = provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    for op, call in (
        ("get", lambda: provider.get(provider_id, Deadline(10))),
        ("list", lambda: provider.list_by_tag(Deadline(10))),
        ("create", lambda: provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))),
        ("delete", lambda: provider.delete(provider_id, Deadline(10))),
    ):
        fake.inject(status, reason=reason, message="injected %s" % reason, times=1)
        exc = error_of(call)
        assert (exc.op, errors.class_of(exc)) == (op, expected)
        assert exc.provider_name == "contract-gcp"
    fake.clear_faults()


def test_slow_answer_is_cut_by_the_deadline_and_is_transient(gcp):
    provider, fake = gcp.provider, gcp.fake
    provider_id = provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    fake.inject(None, method="GET", path="/instances/", delay=5.0, times=1)
    start = time.monotonic()
    exc = error_of(lambda: provider.get(provider_id, Deadline(0.5)))
    assert errors.class_of(exc) == errors.TRANSIENT
    assert time.monotonic() - start < 4.0, "the call was not bounded by the deadline"


def test_managed_firewall_rule_is_created_once(gcp):
    provider = gcp.build(manageFirewall=True, firewallSourceRanges=["127.0.0.0/8"])
    fake = gcp.fake
    provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    provider.create(gcp.request(str(uuid.uuid4())), Deadline(10))
    assert [c for c in calls(fake) if "firewalls" in c] == [
        "GET global/firewalls/%s" % insert.firewall_name("contract-gcp", gcp.installation, 3128),
        "POST global/firewalls",
        "GET global/firewalls/%s" % insert.firewall_name("contract-gcp", gcp.installation, 3128),
    ]
    (rule,) = fake.state.firewalls.values()
    assert rule["sourceRanges"] == ["127.0.0.0/8"] and rule["targetTags"] == ["egress-proxy"]
    assert rule["allowed"] == [{"IPProtocol": "tcp", "ports": ["3128"]}]


def test_internal_mode_reports_the_internal_address():
    harness = GcpBackend(addressMode="internal")
    try:
        req = harness.request(str(uuid.uuid4()))
        provider_id = harness.provider.create(req, Deadline(10))
        assert "accessConfigs" not in harness.fake.log()[0].body["networkInterfaces"][0]
        wait_running(harness.provider, provider_id)
        instance = harness.provider.get(provider_id, Deadline(10))
        assert instance.ip.startswith("127.204.")  # the fake's internal range
        assert harness.fake.state.usage("us-central1")["IN_USE_ADDRESSES"] == 0
    finally:
        harness.teardown()


def test_odd_uid_is_hashed_in_the_label_and_read_back_exactly(gcp):
    uid = "Team.A/Proxy:1"
    req = gcp.request(uid)
    provider_id = gcp.provider.create(req, Deadline(10))
    record = gcp.backend_record(provider_id)
    assert record["labels"]["proxy-operator-uid"].startswith("h-")
    assert gcp.provider.get(provider_id, Deadline(10)).uid == uid
    assert gcp.provider.create(req, Deadline(10)) == provider_id  # adoption matches the hash


def test_close_closes_every_client_and_anonymous_credentials_are_used(gcp):
    api = gcp.provider.inner.api
    gcp.provider.check(Deadline(10))
    gcp.provider.get(gcp.provider.create(gcp.request(str(uuid.uuid4())), Deadline(10)), Deadline(10))
    assert set(api._clients) == {"list", "instances"}
    assert type(api._creds()).__name__ == "AnonymousCredentials"
    assert all("Authorization" not in r.headers for r in gcp.fake.log())
    sessions = [client.transport._session for client in api._clients.values()]
    gcp.provider.close()
    assert api._clients == {}
    for session in sessions:
        assert all(not adapter.poolmanager.pools for adapter in session.adapters.values())
    gcp.provider.check(Deadline(10))  # a closed provider can still be used: clients come back
    assert set(api._clients) == {"list"}
