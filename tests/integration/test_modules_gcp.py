"""The four modules through real ``ansible-playbook`` runs on the gcp provider.

The modules run in their own processes with the real google-cloud-compute client; the Compute
Engine API is the local fake (tests/fakes/gcp) serving from this test process on 127.0.0.1, so
every request the modules make is in its log: the tests count them as well as check results.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from fakes.gcp import FakeCompute
from fakes.gcp.model import Timing

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import (
    CreateRequest,
    Placement,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline

from .playbook import run_playbook

pytestmark = [pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
INFO = "crawl.egress_proxies.proxy_info"
GC = "crawl.egress_proxies.proxy_gc"
CHECK = "crawl.egress_proxies.proxy_check"
ZONE = "us-central1-a"
IMAGE = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64"
PLACEMENT = {"region": "us-central1", "zone": ZONE, "machine_type": "e2-small", "image": IMAGE}


@pytest.fixture
def fake():
    server = FakeCompute(
        "fake-project", timing=Timing(provisioning=0.3, staging=0.3, operation=0.4, deletion=0.4)
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
    assert server.response_problems == []  # every answer fits the discovery document


@pytest.fixture
def gcp(fake):
    """Module defaults for the gcp provider on the fake API; no instance may be left at the end."""
    installation = "it-%s" % uuid.uuid4().hex[:8]
    defaults = {
        "providers": [
            {
                "name": "gcp-it",
                "type": "gcp",
                "gcp": {"project": "fake-project", "apiEndpoint": fake.endpoint},
            }
        ],
        "installation": installation,
    }
    yield defaults
    with fake.state.lock:
        left = [key for key, record in fake.state.instances.items() if record["deleting_until"] is None]
    assert left == [], "instances left behind: %s" % left


def requests_of(fake, since: float) -> list:
    return ["%s %s" % (r.method, r.path) for r in fake.log() if r.at >= since]


def test_lifecycle_idempotent_with_its_api_calls(tmp_path, fake, gcp):
    uid = str(uuid.uuid4())
    name = names.name_from_uid(uid)
    path = "zones/%s/instances/%s" % (ZONE, name)
    item = {"provider": "gcp-it", "uid": uid, "placement": PLACEMENT, "wait": True, "wait_timeout": 30}
    start = time.time()
    run = run_playbook(tmp_path, [{"name": "create", PI: item}], module_defaults=gcp)
    assert run.rc == 0, run.stdout[-3000:]
    created = run["create"]
    assert created["changed"] is True
    assert created["instance"]["state"] == "Running"
    assert created["instance"]["ip"].startswith("127.203.")
    assert created["instance"]["id"] == path and created["instance"]["uid"] == uid
    lifecycle = requests_of(fake, start)
    # create-to-Running: look up (404, then its operations), insert, read back, poll until Running
    assert lifecycle[:4] == [
        "GET " + path,
        "GET zones/%s/operations" % ZONE,
        "POST zones/%s/instances" % ZONE,
        "GET " + path,
    ]
    assert set(lifecycle[4:]) == {"GET " + path} and lifecycle[4:]
    print("\ncreate-to-Running API calls (proxy_instance wait=true): %s" % lifecycle)

    start = time.time()
    run = run_playbook(
        tmp_path,
        [{"name": "again", PI: dict(item, wait=False)}, {"name": "info", INFO: {"provider": "gcp-it"}}],
        module_defaults=gcp,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert run["again"]["changed"] is False
    assert [r["op"] for r in run["again"]["telemetry"]] == ["get"]
    assert [i["id"] for i in run["info"]["instances"]] == [path]
    assert requests_of(fake, start) == ["GET " + path, "GET aggregated/instances"]

    delete = [
        {"name": "delete", PI: dict(item, state="absent")},
        {"name": "delete again", PI: dict(item, state="absent")},
        {"name": "info", INFO: {"provider": "gcp-it", "ids": [path]}},
    ]
    run = run_playbook(tmp_path, delete, module_defaults=gcp)
    assert run.rc == 0, run.stdout[-3000:]
    assert run["delete"]["changed"] is True
    assert run["delete"]["instance"]["state"] == "absent"
    assert run["delete again"]["changed"] is False
    assert run["info"]["not_found"] == [path]
    assert len(fake.log("DELETE", "/instances/")) == 1


def test_a_changed_port_is_refused_with_one_read_and_nothing_changed(tmp_path, fake, gcp):
    """Issue 28 §7: another ``port`` on an existing VM was ``changed: false`` with nothing said,
    while the VM kept the port its firewall rule and cloud-init were made for. The port is
    recorded at create and read back from the ``get`` the module makes anyway."""
    uid = str(uuid.uuid4())
    path = "zones/%s/instances/%s" % (ZONE, names.name_from_uid(uid))
    item = {"provider": "gcp-it", "uid": uid, "placement": PLACEMENT, "port": 3129}
    run = run_playbook(tmp_path, [{"name": "create", PI: item}], module_defaults=gcp)
    assert run.rc == 0, run.stdout[-3000:]
    start = time.time()
    run = run_playbook(
        tmp_path,
        [{"name": "port", PI: dict(item, port=3128), "ignore_errors": True}, {"name": "same", PI: item}],
        module_defaults=gcp,
    )
    refused = run["port"]
    assert refused.get("failed") is True and refused["error_class"] == "permanent", refused
    assert "listens on port 3129, not 3128, and a port cannot change in place" in refused["msg"]
    assert refused.get("changed") is not True
    assert run["same"]["changed"] is False and not run["same"].get("failed"), run["same"]
    assert requests_of(fake, start) == ["GET " + path, "GET " + path]  # one read each, nothing else
    run = run_playbook(tmp_path, [{"name": "delete", PI: dict(item, state="absent")}], module_defaults=gcp)
    assert run.rc == 0, run.stdout[-3000:]


def test_proxy_info_over_100_instances_is_one_request(tmp_path, fake, gcp):
    fake.state.quotas["us-central1"].update(INSTANCES=200.0, CPUS=400.0, IN_USE_ADDRESSES=200.0)
    parsed = config.parse(gcp)
    provider = registry.build(parsed.providers[0], parsed.installation)
    ids = []
    try:
        for _index in range(100):
            uid = str(uuid.uuid4())
            placement = Placement(zone=ZONE, machine_type="e2-small", image=IMAGE)
            ids.append(
                provider.create(
                    CreateRequest(name=names.name_from_uid(uid), uid=uid, placement=placement), Deadline(10)
                )
            )
        start = time.time()
        run = run_playbook(tmp_path, [{"name": "info", INFO: {}}], module_defaults=gcp)
        assert run.rc == 0, run.stdout[-3000:]
        assert sorted(i["id"] for i in run["info"]["instances"]) == sorted(ids)
        listing = requests_of(fake, start)
        assert listing == ["GET aggregated/instances"]
        print("\nproxy_info over 100 instances: %d request(s): %s" % (len(listing), listing))
    finally:
        for provider_id in ids:
            provider.delete(provider_id, Deadline(10))
        provider.close()


def test_proxy_check_is_one_request(tmp_path, fake, gcp):
    start = time.time()
    run = run_playbook(tmp_path, [{"name": "check", CHECK: {}}], module_defaults=gcp)
    assert run.rc == 0, run.stdout[-3000:]
    (entry,) = run["check"]["providers"]
    assert entry["type"] == "gcp" and entry["ready"] is True
    assert [t["reason"] for t in entry["targets"]] == ["Reachable"]
    (request,) = [r for r in fake.log() if r.at >= start]
    assert request.path == "aggregated/instances" and request.query["maxResults"] == ["1"]


def test_asynchronous_bad_image_reaches_the_playbook_and_absent_clears_it(tmp_path, fake, gcp):
    uid = str(uuid.uuid4())
    item = {
        "provider": "gcp-it",
        "uid": uid,
        "placement": dict(PLACEMENT, image="projects/nope/global/images/none"),
    }
    run = run_playbook(tmp_path, [{"name": "create", PI: item}], module_defaults=gcp)
    assert "POST zones/%s/instances" % ZONE in requests_of(fake, 0)
    time.sleep(0.6)  # the insert operation fails after 0.4 s
    run = run_playbook(tmp_path, [{"name": "create again", PI: item}], module_defaults=gcp)
    assert run.rc != 0
    result = run["create again"]
    assert result["error_class"] == "permanent", result
    assert "RESOURCE_NOT_FOUND" in result["msg"] and "projects/nope/global/images/none" in result["msg"]
    run = run_playbook(
        tmp_path,
        [
            {"name": "absent", PI: dict(item, state="absent")},
            {
                "name": "info",
                INFO: {
                    "provider": "gcp-it",
                    "ids": ["zones/%s/instances/%s" % (ZONE, names.name_from_uid(uid))],
                },
            },
        ],
        module_defaults=gcp,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert run["info"]["not_found"] == ["zones/%s/instances/%s" % (ZONE, names.name_from_uid(uid))]


def test_quota_failure_is_reported_then_retried_once_quota_frees(tmp_path, fake, gcp):
    """QuotaExceeded while the failure is fresh; after insertFailureWindowSeconds the instance
    reads as gone again, so the next run creates it, and this time it fits."""
    window = 20  # ansible-playbook task start-up takes seconds on a loaded machine
    gcp["providers"][0]["gcp"]["insertFailureWindowSeconds"] = window
    fake.state.quotas["us-central1"]["CPUS"] = 2.0
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    one = {"provider": "gcp-it", "uid": first, "placement": PLACEMENT}
    two = {"provider": "gcp-it", "uid": second, "placement": PLACEMENT}
    tasks = [
        {"name": "first", PI: one},
        # Accepted, then failing: the read right after create sees the pending insert, which
        # the module reports as a starting instance (the create was submitted).
        {"name": "second", PI: two, "ignore_errors": True},
        {"name": "let the insert fail", "ansible.builtin.command": "sleep 1", "changed_when": False},
        {"name": "second again", PI: two, "ignore_errors": True},
        {"name": "free", PI: dict(one, state="absent", wait=True)},
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=gcp)
    assert run["first"]["changed"] is True
    assert not run["second"].get("failed") and run["second"]["changed"] is True
    assert run["second"]["instance"]["state"] == "Provisioning"
    assert run["second again"]["error_class"] == "quota_exceeded", run["second again"]
    assert "Quota 'CPUS' exceeded" in run["second again"]["msg"]
    assert run["free"]["changed"] is True and not run["free"].get("failed")
    (failed,) = [o for o in fake.state.operations.values() if o.get("error")]
    time.sleep(max(0.0, failed["_done_at"] + window + 0.5 - time.time()))  # past the window
    inserts = len(fake.log("POST", "/instances$"))
    run = run_playbook(
        tmp_path, [{"name": "second retried", PI: dict(two, wait=True, wait_timeout=30)}], module_defaults=gcp
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert run["second retried"]["instance"]["state"] == "Running"
    assert len(fake.log("POST", "/instances$")) == inserts + 1
    run = run_playbook(tmp_path, [{"name": "cleanup", PI: dict(two, state="absent")}], module_defaults=gcp)
    assert run.rc == 0, run.stdout[-3000:]


def test_injected_rate_limit_is_reported_as_quota(tmp_path, fake, gcp):
    fake.inject(429, method="GET", path="^aggregated/", times=1)
    run = run_playbook(tmp_path, [{"name": "info", INFO: {"provider": "gcp-it"}}], module_defaults=gcp)
    errors = run["info"]["errors"]
    assert [(e["provider"], e["error_class"]) for e in errors] == [("gcp-it", "quota_exceeded")], run["info"]


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({}, "providers[0].gcp.project: Field required"),
        ({"project": "fake-project", "addressMode": "public"}, "providers[0].gcp.addressMode"),
        ({"project": "fake-project", "manageFirewall": True}, "firewallSourceRanges: required"),
    ],
)
def test_bad_gcp_config_fails_clearly_and_calls_nothing(tmp_path, fake, block, message):
    providers = [{"name": "gcp-it", "type": "gcp", "gcp": block}]
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "bad",
                PI: {"providers": providers, "provider": "gcp-it", "uid": "u", "placement": PLACEMENT},
            }
        ],
    )
    assert run.rc != 0
    assert message in run["bad"]["msg"], run["bad"]["msg"]
    assert run["bad"]["error_class"] == "permanent"
    assert fake.log() == []


def test_missing_placement_is_permanent_before_any_create(tmp_path, fake, gcp):
    run = run_playbook(
        tmp_path,
        [{"name": "bad", PI: {"provider": "gcp-it", "uid": "u-1", "placement": dict(PLACEMENT, image="")}}],
        module_defaults=gcp,
    )
    assert run.rc != 0
    assert "placement.image is required" in run["bad"]["msg"]
    assert run["bad"]["error_class"] == "permanent"
    assert fake.log("POST") == []


def test_cloud_init_sentinel_never_printed(tmp_path, fake, gcp):
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    uid = str(uuid.uuid4())
    cloud_init = "#cloud-config\nwrite_files:\n- content: %s\n  path: /etc/x\n" % sentinel
    item = {"provider": "gcp-it", "uid": uid, "placement": PLACEMENT, "cloud_init": cloud_init}
    tasks = [
        {"name": "create", PI: dict(item, wait=True, wait_timeout=30)},
        {
            "name": "intruder",
            PI: dict(item, uid=uid + "-other", name=names.name_from_uid(uid)),
            "ignore_errors": True,
        },
        {"name": "info", INFO: {}},
        {"name": "delete", PI: dict(item, state="absent")},
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=gcp, verbosity=4, json_output=False)
    assert run.rc == 0, run.stdout[-3000:]
    assert "debug_log" in run.stdout
    assert "cloud_init_bytes=%d" % len(cloud_init) in run.stdout
    assert sentinel not in run.stdout and sentinel not in run.stderr
    (insert,) = fake.log("POST", "/instances$")
    assert {"key": "user-data", "value": cloud_init} in insert.body["metadata"][
        "items"
    ]  # delivered to the VM


@pytest.mark.parametrize("status,verb", [("TERMINATED", "start"), ("SUSPENDED", "resume")])
def test_present_brings_a_stopped_vm_of_ours_back(tmp_path, fake, gcp, status, verb):
    """Issue 15: create adopted a TERMINATED VM on 409 and each run reported changed while it
    stayed Terminated. state: present now starts (or resumes) it."""
    uid = str(uuid.uuid4())
    name = names.name_from_uid(uid)
    item = {"provider": "gcp-it", "uid": uid, "placement": PLACEMENT, "wait": True, "wait_timeout": 30}
    run = run_playbook(tmp_path, [{"name": "create", PI: item}], module_defaults=gcp)
    assert run.rc == 0, run.stdout[-3000:]
    fake.state.force_status(ZONE, name, status)
    since = time.time()
    tasks = [{"name": "back", PI: item}, {"name": "again", PI: item}]
    run = run_playbook(tmp_path, tasks, module_defaults=gcp)
    try:
        assert run.rc == 0, run.stdout[-3000:]
        assert run["back"]["changed"] is True and run["back"]["instance"]["state"] == "Running"
        assert run["again"]["changed"] is False and run["again"]["instance"]["state"] == "Running"
        assert "POST zones/%s/instances/%s/%s" % (ZONE, name, verb) in requests_of(fake, since)
    finally:
        run_playbook(tmp_path, [{"name": "rm", PI: dict(item, state="absent")}], module_defaults=gcp)


def test_one_bad_placement_in_a_batch_changes_nothing(tmp_path, fake, gcp):
    """Issue 15: placements are checked by their provider for every item before the first call;
    the good first item used to be created before the second one failed."""
    items = [
        {"uid": str(uuid.uuid4()), "placement": PLACEMENT},
        {"uid": str(uuid.uuid4()), "placement": dict(PLACEMENT, zone="not a zone")},
    ]
    run = run_playbook(
        tmp_path, [{"name": "bad", PI: {"provider": "gcp-it", "instances": items}}], module_defaults=gcp
    )
    assert run.rc != 0
    assert "instances[1]: placement.zone 'not a zone' is not a zone name" in run["bad"]["msg"], run["bad"][
        "msg"
    ]
    assert run["bad"]["error_class"] == "permanent"
    assert fake.log() == [], "nothing was asked of the backend"


def test_auth_reaches_the_vm_as_a_hash_beside_the_users_cloud_init(tmp_path, fake, gcp):
    """``auth`` on gcp: the insert's user-data is a MIME document whose first part is the
    request's cloud-init unchanged and whose last is the collection's (the password's SHA-512
    crypt hash, the Squid lines); the password is in no request the fake saw, no output at
    verbosity 4. The same credentials again are ``changed: false``; other ones fail Permanent
    saying the VM must be replaced (check mode too): test_auth_results_and_refusals."""
    import email
    import email.policy

    from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import (
        cloud_init_auth,
        proxy_auth,
    )

    password = "PW-%s" % uuid.uuid4().hex
    uid = str(uuid.uuid4())
    cloud_init = "#cloud-config\npackages: [squid]\n"
    auth = {"username": "crawler", "password": password}
    item = {"provider": "gcp-it", "uid": uid, "placement": PLACEMENT, "cloud_init": cloud_init, "auth": auth}
    tasks = [{"name": "create", PI: dict(item, wait=True, wait_timeout=30)}, {"name": "again", PI: item}]
    run = run_playbook(tmp_path, tasks, module_defaults=gcp, verbosity=4, json_output=False)
    assert password not in run.stdout and password not in run.stderr
    assert run.rc == 0, run.stdout[-3000:]
    (insert,) = fake.log("POST", "/instances$")
    assert all(password not in json.dumps(r.body) + r.path for r in fake.log())
    (user_data,) = [i["value"] for i in insert.body["metadata"]["items"] if i["key"] == "user-data"]
    message = email.message_from_string(user_data, policy=email.policy.compat32)
    payloads = [p.get_payload() for p in message.walk() if not p.is_multipart()]
    assert payloads[0] == cloud_init and len(payloads) == 3
    line = cloud_init_auth.passwd_of(user_data)
    assert line.startswith("crawler:$6$") and proxy_auth.Auth("crawler", password).matches(line)
    assert "http_access deny !egress_authenticated" in payloads[1]
    assert cloud_init_auth.include_command() in payloads[2]  # the script cloud-init runs last
    delete = run_playbook(
        tmp_path, [{"name": "delete", PI: dict(item, state="absent", wait=True)}], module_defaults=gcp
    )
    assert delete.rc == 0, delete.stdout[-3000:]


def test_auth_results_and_refusals(tmp_path, fake, gcp):
    uid = str(uuid.uuid4())
    auth = {"username": "crawler", "password": "first"}
    item = {
        "provider": "gcp-it",
        "uid": uid,
        "placement": PLACEMENT,
        "cloud_init": "#cloud-config\n",
        "auth": auth,
    }
    tasks = [
        {"name": "create", PI: dict(item, wait=True, wait_timeout=30)},
        {"name": "again", PI: item},
        {"name": "other", PI: dict(item, auth=dict(auth, password="second")), "ignore_errors": True},
        {
            "name": "other check",
            PI: dict(item, auth=dict(auth, password="second")),
            "ignore_errors": True,
            "check_mode": True,
        },
        {
            "name": "no cloud-init",
            PI: dict(item, uid=str(uuid.uuid4()), cloud_init=""),
            "ignore_errors": True,
        },
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=gcp)
    try:
        assert run["create"]["changed"] is True
        assert run["again"]["changed"] is False
        for name in ("other", "other check"):
            assert run[name]["failed"] is True and run[name]["error_class"] == "permanent", run[name]
            assert "fixed at creation" in run[name]["msg"] and "second" not in run[name]["msg"]
            assert run[name]["instance"]["reason"] == "CredentialsFixedAtCreation", run[name]
        assert "cloud_init: required with auth on this provider" in run["no cloud-init"]["msg"]
        assert len(fake.log("POST", "/instances$")) == 1  # nothing but the first create was sent
    finally:
        delete = run_playbook(
            tmp_path, [{"name": "d", PI: dict(item, state="absent", wait=True)}], module_defaults=gcp
        )
        assert delete.rc == 0, delete.stdout[-3000:]
