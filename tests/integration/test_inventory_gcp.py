"""The inventory plugin through real ``ansible-inventory`` runs on the gcp provider: the real
google-cloud-compute client in the ``ansible-inventory`` process against the local fake of the
Compute Engine API (tests/fakes/gcp), with VMs created through the modules first.

Covers the zone groups, one list request per provider and run, a provider that cannot be listed
(a warning and the other provider's hosts; an error with ``strict``), and that the failing
provider's service-account key never reaches the output, even at -vvv.
"""

from __future__ import annotations

import uuid

import pytest
from fakes.gcp import FakeCompute
from fakes.gcp.model import Timing

from . import inventory_cli as cli
from .playbook import run_playbook

pytestmark = [pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
IMAGE = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64"
ZONES = {"team-us": "us-central1-a", "team-eu": "europe-west1-b"}
SECRET = "SENTINEL-PRIVATE-KEY-9f3b2c"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """A gcp provider on the fake with one Running VM per zone of ZONES, and ``gcp-bad``, whose
    service-account key file (holding SECRET) is not a valid key, so its list always fails."""
    work = tmp_path_factory.mktemp("inventory-gcp")
    fake = FakeCompute(
        "fake-project", timing=Timing(provisioning=0.2, staging=0.2, operation=0.2, deletion=0.2)
    )
    fake.start()
    key = work / "bad-key.json"
    key.write_text('{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----%s"}' % SECRET)
    gcp = {"project": "fake-project", "apiEndpoint": fake.endpoint}
    providers_file = cli.write_providers(
        work,
        {
            "installation": "inv-%s" % uuid.uuid4().hex[:8],
            "providers": [
                {"name": "gcp-it", "type": "gcp", "gcp": gcp},
                {"name": "gcp-bad", "type": "gcp", "gcp": dict(gcp, credentialsFile=str(key))},
            ],
        },
    )
    items = [
        {"uid": uid, "placement": {"zone": zone, "machine_type": "e2-small", "image": IMAGE}}
        for uid, zone in ZONES.items()
    ]
    create = {"provider": "gcp-it", "wait": True, "wait_timeout": 30, "instances": items}
    run = run_playbook(
        work, [{"name": "create", PI: create}], module_defaults={"providers_file": providers_file}
    )
    assert run.rc == 0, run.stdout[-3000:]
    created = {r["uid"]: r for r in run["create"]["results"]}
    try:
        yield {"fake": fake, "providers_file": providers_file, "created": created, "key": key}
    finally:
        delete = {"provider": "gcp-it", "state": "absent", "instances": [{"uid": u} for u in ZONES]}
        done = run_playbook(
            work, [{"name": "delete", PI: delete}], module_defaults={"providers_file": providers_file}
        )
        fake.stop()
        assert done.rc == 0, done.stdout[-3000:]
        assert fake.response_problems == []  # every answer fits the discovery document


def lists_of(fake, since: int) -> list:
    return [
        r.path for r in fake.log()[since:] if r.method == "GET" and r.path.endswith("aggregated/instances")
    ]


def test_vms_are_hosts_grouped_by_zone_and_a_failing_provider_is_a_warning(fleet, tmp_path):
    fake = fleet["fake"]
    source = cli.write_source(tmp_path, providers_file=fleet["providers_file"])
    before = len(fake.log())
    run = cli.inventory(source, "--list", "-vvv")
    assert run.rc == 0, run.stderr
    assert len(lists_of(fake, before)) == 1  # gcp-it listed once; gcp-bad never got a token
    hostvars = run.hostvars
    assert sorted(hostvars) == sorted(r["name"] for r in fleet["created"].values())
    for uid, zone in ZONES.items():
        result = fleet["created"][uid]
        facts = hostvars[result["name"]]["egress_proxies"]
        assert facts["id"] == "zones/%s/instances/%s" % (zone, result["name"])
        assert (facts["zone"], facts["type"], facts["provider"], facts["uid"]) == (zone, "gcp", "gcp-it", uid)
        assert hostvars[result["name"]]["ansible_host"] == facts["ip"] == result["ip"]
        assert run.hosts_of("zone_" + zone.replace("-", "_")) == [result["name"]]
    assert run.hosts_of("type_gcp") == sorted(hostvars)
    assert run.hosts_of("provider_gcp_it") == sorted(hostvars)
    assert "provider_gcp_bad" not in run.data
    assert "listing provider gcp-bad failed (permanent): " in run.stderr
    assert "credentialsFile %s is not a readable service-account key" % fleet["key"] in run.stderr
    assert "provider=gcp-bad op=list" in run.stdout  # the providers' log, at -vvv only
    assert SECRET not in run.stdout + run.stderr


def test_strict_turns_a_failing_provider_into_an_error(fleet, tmp_path):
    strict = cli.write_source(tmp_path, providers_file=fleet["providers_file"], strict=True)
    run = cli.inventory(strict, "--list", "-vvv")
    assert run.rc != 0
    assert "listing provider gcp-bad failed (permanent): " in run.stderr
    assert SECRET not in run.stdout + run.stderr

    only_good = cli.write_source(
        tmp_path,
        "good.proxies.yml",
        providers_file=fleet["providers_file"],
        strict=True,
        providers=["gcp-it"],
    )
    run = cli.inventory(only_good, "--graph")
    assert run.rc == 0, run.stderr
    assert "gcp-bad" not in run.stderr
    for zone in ZONES.values():
        assert "  |  |--@zone_%s:" % zone.replace("-", "_") in run.stdout.splitlines()
