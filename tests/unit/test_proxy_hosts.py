"""The inventory plugin's mapping from a listed instance to host variables and groups (pure data)."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.plugin_utils import proxy_hosts


@pytest.mark.parametrize(
    ("provider_type", "provider_id", "zone"),
    [
        ("gcp", "zones/europe-west1-b/instances/proxy-a", "europe-west1-b"),
        ("kvm", "hosts/beelink/domains/proxy-a", "beelink"),
        ("kvm2", "hosts/hv-2/domains/proxy-a", "hv-2"),
        ("local", "local/proxy-a", ""),
        ("kubernetes", "team-a/proxy-a", ""),
        ("kubernetes", "zones/x/instances/proxy-a", ""),  # the zone rule is per type
        ("gcp", "hosts/x/domains/proxy-a", ""),
        ("gcp", "zones//instances/proxy-a", ""),
        ("gcp", "", ""),
    ],
)
def test_zone_comes_from_the_id_of_types_that_have_zones(provider_type, provider_id, zone):
    assert proxy_hosts.zone_of(provider_type, provider_id) == zone


def test_host_record_and_groups():
    listed = {
        "id": "hosts/beelink/domains/proxy-a",
        "name": "proxy-a",
        "uid": "u1",
        "state": "Provisioning",
        "ip": "",
        "created_at": "",
        "installation": "prod",
        "provider": "hv",
    }
    record = proxy_hosts.host_record(listed, "kvm2", 8080)
    assert record == dict(listed, type="kvm2", port=8080, zone="beelink")
    assert proxy_hosts.group_keys(record) == [
        ("provider", "hv"),
        ("type", "kvm2"),
        ("state", "provisioning"),
        ("zone", "beelink"),
    ]
    assert [k for k, _v in proxy_hosts.group_keys(dict(record, zone=""))] == ["provider", "type", "state"]
