"""The gcp provider over a fake seam (``FakeSeam``): every branch of create, get, delete,
list_by_tag, check and close, the calls each makes, the timeouts they get, and the cloud-init
sentinel that must never reach a log line or an error."""

from __future__ import annotations

import datetime
import logging
import time
import uuid

import pytest
from fakes.trickle_server import TrickleServer

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import api as gcp_api
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert, labels
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.classify import (
    REASON_SDK_MISSING,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.provider import (
    CALL_BUDGET_SECONDS,
    GcpProvider,
)
from unit.gcp_fake_api import FakeSeam, api_error, instance, missing

ZONE = "us-central1-a"
IMAGE = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64"
UID = "7d4c0c3e-5f0e-4c43-9f6e-3f1b2f4b6a10"
NAME = names.name_from_uid(UID)
PID = "zones/%s/instances/%s" % (ZONE, NAME)


def make(seam=None, **block):
    values = {"project": "my-project"}
    values.update(block)
    parsed = config.parse(
        {"installation": "prod", "providers": [{"name": "gcp-test", "type": "gcp", "gcp": values}]}
    )
    seam = seam or FakeSeam()
    return GcpProvider("gcp-test", "prod", parsed.providers[0].block, api=seam), seam


def request(uid=UID, cloud_init="", **placement):
    fields = {"zone": ZONE, "machine_type": "e2-small", "image": IMAGE}
    fields.update(placement)
    return contract.CreateRequest(
        name=names.name_from_uid(uid), uid=uid, placement=contract.Placement(**fields), cloud_init=cloud_init
    )


def ours(status="RUNNING", nat="203.0.113.7", uid=UID, install="prod", **kw):
    return instance(name=NAME, status=status, nat=nat, labels=labels.marks(uid, install), uid_meta=uid, **kw)


def ago(seconds: float) -> str:
    """An RFC 3339 time ``seconds`` ago, in Pacific time like the API answers."""
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    return then.astimezone(datetime.timezone(datetime.timedelta(hours=-8))).isoformat(timespec="milliseconds")


def op(op_type, status="DONE", error=None, http=0, at=None, name=None, ended=None):
    at = at or ago(50)
    item = {
        "name": name or "operation-%s-%s" % (op_type, at),
        "operationType": op_type,
        "status": status,
        "insertTime": at,
        "targetLink": "https://compute.example/compute/v1/projects/my-project/zones/%s/instances/%s"
        % (ZONE, NAME),
    }
    if ended:
        item["endTime"] = ended
    if error:
        item["error"] = {"errors": [{"code": error, "message": "%s happened" % error}]}
        item["httpErrorStatusCode"] = http
    return item


def klass(exc_info):
    return errors.class_of(exc_info.value)


# -- construction ------------------------------------------------------------------------


def test_constructor_makes_no_call_and_real_adapter_is_lazy():
    _provider, seam = make()
    assert seam.calls == []
    parsed = config.parse({"providers": [{"name": "g", "type": "gcp", "gcp": {"project": "my-project"}}]})
    real = GcpProvider("g", "prod", parsed.providers[0].block)
    assert isinstance(real.api, gcp_api.ComputeAPI)
    assert real.api._clients == {}  # no client, no credentials looked up
    real.close()


def test_missing_sdk_is_permanent_with_a_clear_message(monkeypatch):
    monkeypatch.setattr(gcp_api, "SDK_IMPORT_ERROR", "ImportError: no module named google.cloud")
    parsed = config.parse({"providers": [{"name": "g", "type": "gcp", "gcp": {"project": "my-project"}}]})
    provider = GcpProvider("g", "prod", parsed.providers[0].block)
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.get(PID, Deadline(5))
    assert klass(exc_info) == errors.PERMANENT
    assert "pip install google-cloud-compute" in str(exc_info.value)
    (status,) = provider.check(Deadline(5))
    assert (status.ready, status.reason) == (False, REASON_SDK_MISSING)


def test_missing_credentials_file_is_transient_like_every_credential_file(tmp_path):
    """Issue 15: one rule for credential files (helpers/credential_files.py); a missing gcp key latched
    Permanent while a missing libvirt key was Transient."""
    missing = tmp_path / "not-mounted-yet.json"
    parsed = config.parse(
        {
            "providers": [
                {
                    "name": "g",
                    "type": "gcp",
                    "gcp": {"project": "my-project", "credentialsFile": str(missing)},
                }
            ]
        }
    )
    provider = GcpProvider("g", "prod", parsed.providers[0].block)
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.list_by_tag(Deadline(5))
    assert klass(exc_info) == errors.TRANSIENT
    assert str(missing) in str(exc_info.value)


def test_unreadable_credentials_file_is_permanent_and_does_not_quote_it(tmp_path):
    key = tmp_path / "key.json"
    key.write_text('{"type": "service_account", "private_key": "SECRET-KEY-MATERIAL"}')
    parsed = config.parse(
        {
            "providers": [
                {"name": "g", "type": "gcp", "gcp": {"project": "my-project", "credentialsFile": str(key)}}
            ]
        }
    )
    provider = GcpProvider("g", "prod", parsed.providers[0].block)
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.list_by_tag(Deadline(5))
    assert klass(exc_info) == errors.PERMANENT
    assert str(key) in str(exc_info.value)
    assert "SECRET-KEY-MATERIAL" not in str(exc_info.value)


# -- create ------------------------------------------------------------------------------

INVALID = [
    ({"zone": ""}, "placement.zone is required"),
    ({"zone": "us-central1"}, "placement.zone 'us-central1' is not a zone name"),
    ({"zone": "zones/x"}, "placement.zone"),
    ({"machine_type": ""}, "placement.machine_type is required"),
    ({"image": ""}, "placement.image is required"),
    ({"region": "europe-west1"}, "is not in placement.region 'europe-west1'"),
]


@pytest.mark.parametrize(("placement", "message"), INVALID, ids=[m for _p, m in INVALID])
def test_create_rejects_unsatisfiable_requests_before_any_call(placement, message):
    provider, seam = make(manageFirewall=True, firewallSourceRanges=["10.0.0.0/8"])
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.create(request(**placement), Deadline(5))
    assert klass(exc_info) == errors.PERMANENT
    assert message in str(exc_info.value)
    assert seam.calls == []


def test_create_rejects_bad_name_uid_and_port_before_any_call():
    provider, seam = make()
    for req in (
        contract.CreateRequest(name="Proxy_A", uid="u", placement=request().placement),
        contract.CreateRequest(name="proxy-a", uid="", placement=request().placement),
        contract.CreateRequest(name="proxy-a", uid="u", placement=request().placement, port=0),
    ):
        with pytest.raises(errors.ProviderError) as exc_info:
            provider.create(req, Deadline(5))
        assert klass(exc_info) == errors.PERMANENT
    assert seam.calls == []


def test_create_submits_one_insert_and_does_not_wait():
    provider, seam = make()
    assert provider.create(request(), Deadline(5)) == PID
    assert seam.names() == ["insert_instance"]
    zone, body = seam.inserted[0]
    assert zone == ZONE and body["name"] == NAME
    assert body["labels"][names.LABEL_UID] == UID


def test_create_409_adopts_only_our_uid():
    provider, seam = make()
    seam.instances[(ZONE, NAME)] = ours()
    seam.fail("insert_instance", api_error(409, "alreadyExists"))
    assert provider.create(request(), Deadline(5)) == PID
    assert seam.names() == ["insert_instance", "get_instance"]

    seam.instances[(ZONE, NAME)] = ours(uid="someone-else")
    seam.fail("insert_instance", api_error(409, "alreadyExists"))
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.create(request(), Deadline(5))
    assert klass(exc_info) == errors.PERMANENT
    assert "not ours" in str(exc_info.value)


def test_create_409_with_matching_label_but_other_uid_metadata_is_not_adopted():
    provider, seam = make()
    item = ours()
    item["metadata"]["items"][0]["value"] = "another-uid"
    seam.instances[(ZONE, NAME)] = item
    seam.fail("insert_instance", api_error(409, "alreadyExists"))
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.create(request(), Deadline(5))
    assert klass(exc_info) == errors.PERMANENT


def test_create_409_then_gone_is_transient():
    provider, seam = make()
    seam.fail("insert_instance", api_error(409, "alreadyExists"))
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.create(request(), Deadline(5))
    assert klass(exc_info) == errors.TRANSIENT


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            api_error(
                404, "notFound", "The resource 'projects/my-project/zones/us-central1-a' was not found"
            ),
            errors.PERMANENT,
        ),
        (api_error(429, "rateLimitExceeded"), errors.QUOTA_EXCEEDED),
        (api_error(403, "quotaExceeded"), errors.QUOTA_EXCEEDED),
        (api_error(403, "forbidden"), errors.PERMANENT),
        (api_error(400, "invalid"), errors.PERMANENT),
        (api_error(503, "backendError"), errors.TRANSIENT),
    ],
)
def test_create_errors_are_classified_and_never_not_found(error, expected):
    provider, seam = make()
    seam.fail("insert_instance", error)
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.create(request(), Deadline(5))
    assert klass(exc_info) == expected
    assert exc_info.value.provider_name == "gcp-test" and exc_info.value.op == "create"


def test_create_with_managed_firewall_creates_the_rule_once_then_only_reads_it():
    provider, seam = make(manageFirewall=True, firewallSourceRanges=["10.0.0.0/8"])
    provider.create(request(), Deadline(5))
    assert seam.names() == ["get_firewall", "insert_firewall", "insert_instance"]
    (rule,) = seam.firewalls.values()
    assert rule["allowed"] == [{"IPProtocol": "tcp", "ports": ["3128"]}]
    seam.calls.clear()
    provider.create(request(uid="other"), Deadline(5))
    assert seam.names() == ["get_firewall", "insert_instance"]


def test_firewall_race_409_is_fine_and_drift_is_patched():
    provider, seam = make(manageFirewall=True, firewallSourceRanges=["10.0.0.0/8"])
    seam.fail("insert_firewall", api_error(409, "alreadyExists"))
    provider.create(request(), Deadline(5))
    assert seam.names() == ["get_firewall", "insert_firewall", "insert_instance"]
    seam.calls.clear()
    # Someone widened the rule by hand: the config wins.
    wanted = insert.build_firewall("gcp-test", "prod", 3128, "my-project", provider.config)
    seam.firewalls[wanted["name"]] = dict(wanted, sourceRanges=["0.0.0.0/0"])
    provider.create(request(), Deadline(5))
    assert seam.names() == ["get_firewall", "patch_firewall", "insert_instance"]
    assert seam.firewalls[wanted["name"]]["sourceRanges"] == ["10.0.0.0/8"]


def test_firewall_permission_denied_fails_create_before_insert():
    provider, seam = make(manageFirewall=True, firewallSourceRanges=["10.0.0.0/8"])
    seam.fail("get_firewall", api_error(403, "forbidden", "Required 'compute.firewalls.get' permission"))
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.create(request(), Deadline(5))
    assert klass(exc_info) == errors.PERMANENT
    assert "insert_instance" not in seam.names()


# -- get -----------------------------------------------------------------------------------

STATES = [
    ("PROVISIONING", "203.0.113.7", contract.PROVISIONING),
    ("STAGING", "203.0.113.7", contract.PROVISIONING),
    ("REPAIRING", None, contract.PROVISIONING),
    ("RUNNING", None, contract.PROVISIONING),
    ("RUNNING", "", contract.PROVISIONING),
    ("RUNNING", "203.0.113.7", contract.RUNNING),
    ("STOPPING", "203.0.113.7", contract.STOPPED),
    ("STOPPED", None, contract.STOPPED),
    ("SUSPENDING", None, contract.STOPPED),
    ("SUSPENDED", None, contract.STOPPED),
    ("TERMINATED", None, contract.TERMINATED),
    ("SOMETHING_NEW", "203.0.113.7", contract.STOPPED),
]


@pytest.mark.parametrize(
    ("status", "nat", "state"), STATES, ids=["%s-%s" % (row[0], row[1]) for row in STATES]
)
def test_state_table(status, nat, state):
    provider, seam = make()
    seam.instances[(ZONE, NAME)] = ours(status=status, nat=nat)
    got = provider.get(PID, Deadline(5))
    assert got.state == state
    assert got.ip == ("203.0.113.7" if state == contract.RUNNING else "")
    assert seam.names() == ["get_instance"]


def test_internal_mode_reports_the_internal_ip():
    provider, seam = make(addressMode="internal")
    seam.instances[(ZONE, NAME)] = ours(nat=None, internal="10.1.2.3")
    got = provider.get(PID, Deadline(5))
    assert (got.state, got.ip) == (contract.RUNNING, "10.1.2.3")


def test_uid_created_at_and_installation_are_read_back():
    provider, seam = make()
    seam.instances[(ZONE, NAME)] = ours(created="2026-11-29T01:02:03.456-08:00")
    got = provider.get(PID, Deadline(5))
    assert got.uid == UID and got.installation == "prod" and got.id == PID and got.name == NAME
    assert got.created_at == datetime.datetime(2026, 11, 29, 9, 2, 3, 456000, tzinfo=datetime.UTC)


def test_unparsable_creation_time_is_none_so_gc_sees_it_as_old():
    provider, seam = make()
    seam.instances[(ZONE, NAME)] = ours(created="yesterday-ish")
    assert provider.get(PID, Deadline(5)).created_at is None


def test_hashed_uid_label_still_reads_back_the_exact_uid():
    odd = "Proxy/With.Odd:UID"
    provider, seam = make()
    seam.instances[(ZONE, NAME)] = instance(name=NAME, labels=labels.marks(odd, "prod"), uid_meta=odd)
    assert provider.get(PID, Deadline(5)).uid == odd


@pytest.mark.parametrize(
    "bad",
    [
        "",
        None,
        "proxy-x",
        "zones/us-central1-a/instances/",
        "zones/x/instances/proxy-a",
        "local/proxy-a",
        "zones/us-central1-a/instances/proxy-a/",
        "zones/us-central1-a/instances/proxy-a\n",
    ],
)
def test_malformed_ids_are_permanent_without_a_call(bad):
    provider, seam = make()
    for call in (provider.get, provider.delete):
        with pytest.raises(errors.ProviderError) as exc_info:
            call(bad, Deadline(5))
        assert klass(exc_info) == errors.PERMANENT
    assert seam.calls == []


def test_not_found_without_operations_is_not_found():
    provider, seam = make()
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.get(PID, Deadline(5))
    assert klass(exc_info) == errors.NOT_FOUND
    assert seam.names() == ["get_instance", "list_zone_operations"]
    _name, (zone, filter_, _max), _timeout = seam.calls[1]
    assert zone == ZONE and filter_ == 'targetLink eq ".*/zones/%s/instances/%s"' % (ZONE, NAME)


@pytest.mark.parametrize(
    ("make_ops", "expected", "text"),
    [
        (lambda: [op("insert", error="QUOTA_EXCEEDED", http=403)], errors.QUOTA_EXCEEDED, "QUOTA_EXCEEDED"),
        (
            lambda: [op("insert", error="RESOURCE_NOT_FOUND", http=404)],
            errors.PERMANENT,
            "RESOURCE_NOT_FOUND",
        ),
        (
            lambda: [op("insert", error="INVALID_FIELD_VALUE", http=400)],
            errors.PERMANENT,
            "INVALID_FIELD_VALUE",
        ),
        (lambda: [op("insert", status="RUNNING")], errors.TRANSIENT, "not visible yet"),
        (lambda: [op("insert", status="PENDING")], errors.TRANSIENT, "not visible yet"),
        (lambda: [op("insert")], errors.NOT_FOUND, "no instance"),  # created, then gone
        (
            lambda: [
                op("insert", at=ago(50)),
                op("delete", at=ago(40)),
            ],
            errors.NOT_FOUND,
            "no instance",
        ),
        (
            # the latest insert counts: an old failure, then a successful retry that was deleted
            lambda: [
                op("insert", error="QUOTA_EXCEEDED", http=403, at=ago(50)),
                op("insert", at=ago(30)),
                op("delete", at=ago(20)),
            ],
            errors.NOT_FOUND,
            "no instance",
        ),
        (
            lambda: [
                op("insert", at=ago(50)),
                op("insert", error="QUOTA_EXCEEDED", http=403, at=ago(30)),
            ],
            errors.QUOTA_EXCEEDED,
            "QUOTA_EXCEEDED",
        ),
    ],
    ids=[
        "quota",
        "bad-image",
        "bad-machine-type",
        "insert-running",
        "insert-pending",
        "created-then-gone",
        "deleted",
        "failed-then-retried-then-deleted",
        "latest-insert-failed",
    ],
)
def test_async_insert_failures_reach_get(make_ops, expected, text):
    provider, seam = make()
    # Built now, not at collection: the failure window counts from the operations' times.
    seam.operations[ZONE] = list(reversed(make_ops()))  # the provider orders them itself
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.get(PID, Deadline(5))
    assert klass(exc_info) == expected
    assert text in str(exc_info.value)


def test_an_old_async_failure_is_reported_as_gone_so_callers_create_again():
    provider, seam = make(insertFailureWindowSeconds=60)
    seam.operations[ZONE] = [op("insert", error="QUOTA_EXCEEDED", http=403, at=ago(100), ended=ago(90))]
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.get(PID, Deadline(5))
    assert klass(exc_info) == errors.NOT_FOUND
    seam.operations[ZONE] = [op("insert", error="QUOTA_EXCEEDED", http=403, at=ago(100), ended=ago(30))]
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.get(PID, Deadline(5))
    assert klass(exc_info) == errors.QUOTA_EXCEEDED  # the window counts from when it failed


def test_operation_lookup_failure_is_never_not_found():
    provider, seam = make()
    seam.fail("list_zone_operations", api_error(503, "backendError"))
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.get(PID, Deadline(5))
    assert klass(exc_info) == errors.TRANSIENT


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (api_error(429, "rateLimitExceeded"), errors.QUOTA_EXCEEDED),
        (api_error(403, "forbidden"), errors.PERMANENT),
        (api_error(500, "backendError"), errors.TRANSIENT),
        (api_error(401, "required"), errors.PERMANENT),
    ],
)
def test_get_errors_are_classified(error, expected):
    provider, seam = make()
    seam.fail("get_instance", error)
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.get(PID, Deadline(5))
    assert klass(exc_info) == expected
    assert exc_info.value.op == "get" and exc_info.value.provider_id == PID


def test_raw_status_and_reasons_are_logged(caplog):
    caplog.set_level(logging.DEBUG, logger="crawl.egress_proxies.providers.gcp")
    provider, seam = make()
    seam.fail("get_instance", api_error(403, "rateLimitExceeded"))
    with pytest.raises(errors.ProviderError):
        provider.get(PID, Deadline(5))
    assert "status=403 reasons=rateLimitExceeded" in caplog.text
    assert "class=quota_exceeded" in caplog.text


# -- delete --------------------------------------------------------------------------------


def test_delete_submits_once_and_not_again_while_running():
    provider, seam = make()
    seam.instances[(ZONE, NAME)] = ours()
    provider.delete(PID, Deadline(5))
    assert seam.names() == ["list_zone_operations", "get_instance", "delete_instance"]
    seam.operations[ZONE] = [op("delete", status="RUNNING")]
    seam.calls.clear()
    provider.delete(PID, Deadline(5))
    assert seam.names() == ["list_zone_operations"]


def test_delete_of_a_gone_instance_succeeds():
    provider, seam = make()
    provider.delete(PID, Deadline(5))
    assert seam.names() == ["list_zone_operations", "get_instance"]


@pytest.mark.parametrize(
    ("item", "whose"),
    [
        (instance(name=NAME, labels={"team": "web"}), "not managed"),
        (ours(install="elsewhere"), "installation 'elsewhere'"),
    ],
    ids=["unmarked", "another installation"],
)
def test_delete_refuses_an_instance_that_is_not_ours(item, whose):
    provider, seam = make()
    seam.instances[(ZONE, NAME)] = item
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.delete(PID, Deadline(5))
    assert klass(exc_info) == errors.PERMANENT and whose in str(exc_info.value)
    assert seam.names() == ["list_zone_operations", "get_instance"]  # never delete_instance


def test_delete_forgets_a_failed_insert_so_get_answers_not_found():
    provider, seam = make()
    seam.operations[ZONE] = [
        op("insert", error="QUOTA_EXCEEDED", http=403, name="operation-failed-1", at=ago(40)),
        op("insert", error="QUOTA_EXCEEDED", http=403, name="operation-failed-2", at=ago(20)),
    ]
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.get(PID, Deadline(5))
    assert klass(exc_info) == errors.QUOTA_EXCEEDED
    provider.delete(PID, Deadline(5))
    assert seam.names()[-4:] == [
        "list_zone_operations",
        "get_instance",  # proven missing: nothing to delete
        "delete_zone_operation",
        "delete_zone_operation",
    ]
    assert seam.operations[ZONE] == []
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.get(PID, Deadline(5))
    assert klass(exc_info) == errors.NOT_FOUND


def test_delete_in_an_unknown_zone_succeeds():
    provider, seam = make()
    seam.fail("list_zone_operations", missing("zones", "mars-north1-a"))
    seam.fail("delete_instance", missing("zones", "mars-north1-a"))
    provider.delete("zones/mars-north1-a/instances/proxy-a", Deadline(5))


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(api_error(404), id="404 without an API error body (a wrong apiEndpoint)"),
        pytest.param(missing(), id="the project is missing (a wrong project)"),
        pytest.param(
            api_error(404, "notFound", "The resource 'projects/other/zones/%s' was not found" % ZONE),
            id="another project",
        ),
    ],
)
def test_a_404_that_does_not_name_the_instance_is_never_not_found(error):
    """Issue 15: only the API saying this instance (or its zone) does not exist is NotFound."""
    for method, call in (
        ("get_instance", lambda p: p.get(PID, Deadline(5))),
        ("list_zone_operations", lambda p: p.delete(PID, Deadline(5))),
        ("delete_instance", lambda p: p.delete(PID, Deadline(5))),
        ("list_instances_page", lambda p: p.list_by_tag(Deadline(5))),
    ):
        provider, seam = make()
        seam.instances[(ZONE, NAME)] = ours()  # so a delete reaches delete_instance
        seam.fail(method, error)
        with pytest.raises(errors.ProviderError) as exc_info:
            call(provider)
        assert klass(exc_info) == errors.TRANSIENT, method


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (api_error(403, "forbidden"), errors.PERMANENT),
        (api_error(503), errors.TRANSIENT),
        (api_error(429), errors.QUOTA_EXCEEDED),
    ],
)
def test_delete_errors_are_classified(error, expected):
    provider, seam = make()
    seam.instances[(ZONE, NAME)] = ours()
    seam.fail("delete_instance", error)
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.delete(PID, Deadline(5))
    assert klass(exc_info) == expected


# -- list ----------------------------------------------------------------------------------


def scoped(*items):
    return {"instances": list(items)}


def test_list_filters_pages_and_leaves_out_unreachable_zones(caplog):
    caplog.set_level(logging.WARNING, logger="crawl.egress_proxies.providers.gcp")
    provider, seam = make()
    mine = ours()
    other_install = instance(name="proxy-other", labels=labels.marks("u2", "staging"))
    unmarked = instance(name="proxy-unmarked", labels={"team": "x"})
    seam.pages = [
        {
            "items": {
                "zones/us-central1-a": scoped(mine, other_install, unmarked),
                "zones/us-central1-b": {"warning": {"code": "NO_RESULTS_ON_PAGE", "message": "none"}},
                "zones/europe-west1-b": {"warning": {"code": "UNREACHABLE", "message": "unreachable"}},
            },
            "nextPageToken": "t2",
            "unreachables": ["zones/europe-west1-b"],
        },
        {
            "items": {
                "zones/us-central1-b": scoped(
                    instance(name="proxy-b", zone="us-central1-b", labels=labels.marks("u3", "prod"))
                )
            }
        },
    ]
    found = provider.list_by_tag(Deadline(5))
    assert [i.id for i in found] == [PID, "zones/us-central1-b/instances/proxy-b"]
    assert [c[1][1:] for c in seam.calls] == [(500, ""), (500, "t2")]
    assert seam.calls[0][1][0] == labels.list_filter("prod")
    assert "europe-west1-b left out: UNREACHABLE" in caplog.text


def test_list_fails_whole_when_a_page_fails():
    provider, seam = make()
    seam.pages = [{"items": {"zones/us-central1-a": scoped(ours())}, "nextPageToken": "t2"}]
    original = seam.list_instances_page

    def second_fails(filter_, max_results, page_token, timeout):
        if page_token:
            raise api_error(503, "backendError")
        return original(filter_, max_results, page_token, timeout)

    seam.list_instances_page = second_fails
    with pytest.raises(errors.ProviderError) as exc_info:
        provider.list_by_tag(Deadline(5))
    assert klass(exc_info) == errors.TRANSIENT and exc_info.value.op == "list"


# -- check and close -----------------------------------------------------------------------


def test_check_is_one_list_call_with_max_results_1():
    provider, seam = make()
    (status,) = provider.check(Deadline(5))
    assert (status.ready, status.reason, status.target) == (
        True,
        contract.REASON_REACHABLE,
        "project/my-project",
    )
    assert seam.names() == ["list_instances_page"]
    assert seam.calls[0][1][1] == 1


def test_check_reports_quota_headroom_of_the_configured_regions_only():
    provider, seam = make(regions=["europe-west1", "us-central1"])
    seam.pages = [{"items": {"zones/asia-east1-a": scoped(ours())}}]  # a region in no config
    quotas = [
        {"metric": "INSTANCES", "limit": 24.0, "usage": 3.0},
        {"metric": "CPUS", "limit": 24.0, "usage": 6.0},
        {"metric": "IN_USE_ADDRESSES", "limit": 8.0, "usage": 3.0},
        {"metric": "SSD_TOTAL_GB", "limit": 500.0, "usage": 0.0},
    ]
    seam.regions = {
        "europe-west1": {"name": "europe-west1", "quotas": quotas},
        "us-central1": {"name": "us-central1", "quotas": quotas[:1]},
    }
    (status,) = provider.check(Deadline(5))
    assert seam.names() == ["list_instances_page", "get_region", "get_region"]
    assert status.details["quota"]["europe-west1"] == {
        "INSTANCES": {"limit": 24.0, "usage": 3.0, "headroom": 21.0},
        "CPUS": {"limit": 24.0, "usage": 6.0, "headroom": 18.0},
        "IN_USE_ADDRESSES": {"limit": 8.0, "usage": 3.0, "headroom": 5.0},
    }
    assert status.details["quota"]["us-central1"] == {
        "INSTANCES": {"limit": 24.0, "usage": 3.0, "headroom": 21.0}
    }


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (api_error(401, "required"), contract.REASON_UNAUTHORIZED),
        (api_error(403, "forbidden"), contract.REASON_FORBIDDEN),
        (api_error(500, "backendError"), contract.REASON_API_ERROR),
    ],
)
def test_check_failures_are_statuses_never_exceptions(error, reason):
    provider, seam = make()
    seam.fail("list_instances_page", error)
    (status,) = provider.check(Deadline(5))
    assert (status.ready, status.reason) == (False, reason)


def test_check_with_expired_deadline_makes_no_call():
    provider, seam = make()
    (status,) = provider.check(Deadline(0))
    assert (status.ready, status.reason) == (False, contract.REASON_TIMEOUT)
    assert seam.calls == []


def test_close_closes_the_clients():
    provider, seam = make()
    provider.close()
    assert seam.closed


# -- deadlines -------------------------------------------------------------------------------


def test_every_call_gets_a_timeout_from_the_deadline():
    provider, seam = make(manageFirewall=True, firewallSourceRanges=["10.0.0.0/8"])
    seam.instances[(ZONE, NAME)] = ours()
    provider.create(request(uid="new"), Deadline(7))
    provider.get(PID, Deadline(7))
    provider.delete(PID, Deadline(7))
    provider.list_by_tag(Deadline(7))
    provider.check(Deadline(7))
    provider.create(request(), Deadline.none())
    timeouts = [c[2] for c in seam.calls]
    assert all(t is not None for t in timeouts)
    assert all(0 < t <= 7 for t in timeouts[:-2])
    assert timeouts[-1] == CALL_BUDGET_SECONDS  # no deadline: the per-call cap


def test_cancelled_deadline_stops_before_the_call():
    provider, seam = make()
    deadline = Deadline(5)
    deadline.cancel()
    for call in (
        lambda: provider.create(request(), deadline),
        lambda: provider.get(PID, deadline),
        lambda: provider.delete(PID, deadline),
        lambda: provider.list_by_tag(deadline),
    ):
        with pytest.raises(errors.ProviderError) as exc_info:
            call()
        assert klass(exc_info) == errors.TRANSIENT
    assert seam.calls == []


# -- secrets -------------------------------------------------------------------------------


def test_cloud_init_sentinel_never_reaches_logs_or_errors(caplog):
    caplog.set_level(logging.DEBUG)
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    provider, seam = make(manageFirewall=True, firewallSourceRanges=["10.0.0.0/8"])
    req = request(cloud_init="#cloud-config\nwrite_files:\n- content: %s\n" % sentinel)
    raised = []
    provider.create(req, Deadline(5))
    assert seam.inserted[0][1]["metadata"]["items"][1]["value"] == req.cloud_init  # delivered ...
    seam.instances[(ZONE, NAME)] = dict(
        ours(uid="x"), metadata={"items": [{"key": "user-data", "value": req.cloud_init}]}
    )
    for error in (
        api_error(409, "alreadyExists"),
        api_error(400, "invalid"),
        api_error(403, "quotaExceeded"),
    ):
        seam.fail("insert_instance", error)
        with pytest.raises(errors.ProviderError) as exc_info:
            provider.create(req, Deadline(5))
        raised.append(exc_info.value)
    provider.get(PID, Deadline(5))
    seam.pages = [{"items": {"zones/us-central1-a": scoped(seam.instances[(ZONE, NAME)])}}]
    provider.list_by_tag(Deadline(5))
    assert "cloud_init_bytes=%d" % len(req.cloud_init) in caplog.text  # ... and only counted
    assert sentinel not in caplog.text
    for record in caplog.records:
        assert sentinel not in record.getMessage()
    for exc in raised:
        assert sentinel not in str(exc) and sentinel not in repr(exc.__cause__)


def test_id_for_needs_no_call_and_ignores_the_namespace():
    provider, seam = make()
    placement = request().placement
    assert provider.id_for(NAME, placement) == PID
    assert provider.id_for(NAME, placement, "some-namespace") == PID
    assert provider.id_for("Bad_Name", placement) is None
    assert provider.id_for(NAME, contract.Placement(zone="")) is None
    assert seam.calls == []


def test_an_endpoint_that_trickles_its_answer_is_bounded_by_the_deadline():
    """Issue 15: the client's timeout applies per socket read, so an answer that keeps arriving
    one byte at a time held get past any deadline. The whole call is bounded now."""
    server = TrickleServer(interval=0.2)
    try:
        parsed = config.parse(
            {
                "providers": [
                    {
                        "name": "g",
                        "type": "gcp",
                        "gcp": {"project": "my-project", "apiEndpoint": server.endpoint},
                    }
                ]
            }
        )
        provider = GcpProvider("g", "prod", parsed.providers[0].block)
        started = time.monotonic()
        with pytest.raises(errors.ProviderError) as exc_info:
            provider.get(PID, Deadline(1.5))
        assert time.monotonic() - started < 5, "the trickling answer held the call"
        assert klass(exc_info) == errors.TRANSIENT
    finally:
        server.close()
