"""The ``gcp:`` config block: defaults, and every bad value refused with its exact path."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError


def parse(**block):
    return config.parse(
        {"providers": [{"name": "ok", "type": "local"}, {"name": "g", "type": "gcp", "gcp": block}]}
    )


def test_defaults():
    block = parse(project="my-project").providers[1].block
    assert block.project == "my-project"
    assert block.network == "default"
    assert block.network_tag == "egress-proxy"
    assert block.disk_size_gb == 10
    assert block.address_mode == "external"
    assert block.manage_firewall is False
    assert block.firewall_source_ranges == []
    assert block.regions == []
    assert block.credentials_file == ""
    assert block.api_endpoint == ""


def test_full_block():
    block = (
        parse(
            project="example.com:my-project",
            network="projects/host/global/networks/shared-vpc",
            networkTag="proxies",
            diskSizeGb=20,
            addressMode="internal",
            manageFirewall=True,
            firewallSourceRanges=["10.0.0.0/8"],
            regions=["europe-west1", "us-central1"],
            credentialsFile="/etc/egress/key.json",
            apiEndpoint="http://127.0.0.1:8080/",
        )
        .providers[1]
        .block
    )
    assert block.address_mode == "internal"
    assert block.api_endpoint == "http://127.0.0.1:8080"


BAD = [
    ({}, "providers[1].gcp.project: Field required"),
    ({"project": ""}, "providers[1].gcp.project:"),
    ({"project": "My_Project"}, "providers[1].gcp.project: 'My_Project' is not a project id"),
    ({"project": "p1"}, "providers[1].gcp.project:"),
    ({"project": "my-project", "network": "bad/net"}, "providers[1].gcp.network:"),
    ({"project": "my-project", "networkTag": "Bad_Tag"}, "providers[1].gcp.networkTag:"),
    ({"project": "my-project", "diskSizeGb": 5}, "providers[1].gcp.diskSizeGb:"),
    ({"project": "my-project", "diskSizeGb": "10"}, "providers[1].gcp.diskSizeGb:"),
    (
        {"project": "my-project", "addressMode": "public"},
        "providers[1].gcp.addressMode: must be 'external' or 'internal'",
    ),
    ({"project": "my-project", "manageFirewall": True}, "firewallSourceRanges: required"),
    (
        {"project": "my-project", "firewallSourceRanges": ["10.0.0.0/33"]},
        "providers[1].gcp.firewallSourceRanges:",
    ),
    ({"project": "my-project", "regions": ["europe-west1-b"]}, "providers[1].gcp.regions:"),
    (
        {"project": "my-project", "credentialsFile": "key.json"},
        "providers[1].gcp.credentialsFile: must be an absolute path",
    ),
    ({"project": "my-project", "apiEndpoint": "127.0.0.1:80"}, "providers[1].gcp.apiEndpoint:"),
    ({"project": "my-project", "apiEndpoint": "http://h/path"}, "providers[1].gcp.apiEndpoint:"),
    ({"project": "my-project", "zone": "us-central1-a"}, "providers[1].gcp.zone: unknown field"),
    ({"project": "my-project", "disk_size_gb": 20}, "providers[1].gcp.disk_size_gb: unknown field"),
]


@pytest.mark.parametrize(
    ("block", "message"), BAD, ids=[m.split(":")[0] + "-" + str(i) for i, (_b, m) in enumerate(BAD)]
)
def test_bad_values_name_their_field(block, message):
    with pytest.raises(ConfigError) as exc_info:
        parse(**block)
    assert any(message in problem for problem in exc_info.value.problems), exc_info.value.problems


def test_gcp_is_a_registered_type():
    with pytest.raises(ConfigError) as exc_info:
        config.parse({"providers": [{"name": "g", "type": "gcpx"}]})
    assert "gcp" in str(exc_info.value) and "local" in str(exc_info.value)
