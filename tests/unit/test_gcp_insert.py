"""The pure request builders of the gcp provider: the insert body, the firewall rule, labels."""

from __future__ import annotations

import json

import pytest
from google.cloud import compute_v1

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert, labels
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.config import GcpConfig

UID = "0f9c4a8e-4b7e-4f6b-9a39-0c2a1f3e5d11"
REQ = contract.CreateRequest(
    name=names.name_from_uid(UID),
    uid=UID,
    placement=contract.Placement(
        region="europe-west1",
        zone="europe-west1-b",
        machine_type="e2-small",
        image="projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
    ),
    cloud_init="#cloud-config\npackages: [squid]\n",
    port=3128,
)


def settings(**overrides):
    values = dict(
        project="my-project",
        installation="prod",
        network="default",
        network_tag="egress-proxy",
        disk_size_gb=20,
        address_mode="external",
    )
    values.update(overrides)
    return insert.InsertSettings(**values)


def test_insert_body_exactly():
    body = insert.build_instance(REQ, settings())
    assert body == {
        "name": REQ.name,
        "machineType": "zones/europe-west1-b/machineTypes/e2-small",
        "labels": {
            "proxy-operator-managed": "true",
            "proxy-operator-uid": UID,
            "proxy-operator-install": "prod",
        },
        "tags": {"items": ["egress-proxy"]},
        "disks": [
            {
                "boot": True,
                "autoDelete": True,
                "type": "PERSISTENT",
                "initializeParams": {
                    "sourceImage": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
                    "diskSizeGb": "20",
                    "diskType": "zones/europe-west1-b/diskTypes/pd-balanced",
                },
            }
        ],
        "networkInterfaces": [
            {
                "network": "projects/my-project/global/networks/default",
                "accessConfigs": [{"name": "External NAT", "type": "ONE_TO_ONE_NAT"}],
            }
        ],
        "metadata": {
            "items": [
                {"key": "proxy-operator-uid", "value": UID},
                {"key": "user-data", "value": REQ.cloud_init},
                {"key": "proxy-operator-port", "value": "3128"},
            ]
        },
    }


def test_internal_mode_has_no_access_config_and_full_urls_pass_through():
    req = contract.CreateRequest(
        name="proxy-x",
        uid="u",
        placement=contract.Placement(
            zone="us-east1-c",
            machine_type="zones/us-east1-c/machineTypes/n2-standard-2",
            image="global/images/x",
        ),
    )
    body = insert.build_instance(
        req, settings(address_mode="internal", network="projects/shared/global/networks/vpc")
    )
    assert body["networkInterfaces"] == [{"network": "projects/shared/global/networks/vpc"}]
    assert body["machineType"] == "zones/us-east1-c/machineTypes/n2-standard-2"
    keys = [i["key"] for i in body["metadata"]["items"]]
    assert keys == ["proxy-operator-uid", "proxy-operator-port"]  # no empty user-data


@pytest.mark.parametrize("mode", ["external", "internal"])
def test_the_sdk_parses_the_body_strictly(mode):
    """The adapter hands the body to Instance.from_json, which rejects unknown fields."""
    body = insert.build_instance(REQ, settings(address_mode=mode))
    message = compute_v1.Instance.from_json(json.dumps(body))
    assert message.disks[0].auto_delete is True
    assert message.disks[0].initialize_params.disk_size_gb == 20
    assert message.labels["proxy-operator-managed"] == "true"
    assert message.metadata.items[1].value == REQ.cloud_init
    with pytest.raises(Exception):  # noqa: B017 - the json_format ParseError type is internal
        compute_v1.Instance.from_json(json.dumps(dict(body, bogusField=1)))


def test_describe_never_carries_metadata_values():
    text = repr(insert.describe(insert.build_instance(REQ, settings())))
    assert "packages: [squid]" not in text and UID not in text.split("labels")[0]
    assert "'key': 'user-data', 'bytes': %d" % len(REQ.cloud_init) in text


def test_firewall_rule_and_name():
    config = GcpConfig.model_validate(
        {
            "project": "my-project",
            "manageFirewall": True,
            "firewallSourceRanges": ["198.51.100.0/24", "10.0.0.0/8"],
        }
    )
    rule = insert.build_firewall("gcp-eu", "prod", 3128, "my-project", config)
    assert rule["name"] == insert.firewall_name("gcp-eu", "prod", 3128)
    assert rule["name"].startswith("ep-gcp-eu-3128-")
    assert rule["targetTags"] == ["egress-proxy"]
    assert rule["sourceRanges"] == ["10.0.0.0/8", "198.51.100.0/24"]
    assert rule["allowed"] == [{"IPProtocol": "tcp", "ports": ["3128"]}]
    assert rule["network"] == "projects/my-project/global/networks/default"
    compute_v1.Firewall.from_json(json.dumps(rule))
    assert not insert.firewall_differs(dict(rule, network="https://x/compute/v1/" + rule["network"]), rule)
    assert insert.firewall_differs(dict(rule, sourceRanges=["0.0.0.0/0"]), rule)
    assert insert.firewall_differs(dict(rule, allowed=[{"IPProtocol": "tcp", "ports": ["8080"]}]), rule)


def test_firewall_names_are_valid_and_distinct():
    long_name = "a" + "b" * 62
    seen = set()
    for provider, install, port in [
        (long_name, "i1", 3128),
        (long_name, "i2", 3128),
        ("gcp", "i1", 3128),
        ("gcp", "i1", 8080),
    ]:
        name = insert.firewall_name(provider, install, port)
        assert len(name) <= 63 and name[0].isalpha() and name[-1].isalnum()
        seen.add(name)
    assert len(seen) == 4


@pytest.mark.parametrize(
    ("uid", "stored_as_is"),
    [
        ("0f9c4a8e-4b7e-4f6b-9a39-0c2a1f3e5d11", True),
        ("my_proxy-1", True),
        ("Proxy-A", False),  # uppercase
        ("a.b", False),  # dot
        ("x" * 64, False),  # too long
        ("h-abc", False),  # would be ambiguous with a hashed value
    ],
)
def test_uid_label_values(uid, stored_as_is):
    value = labels.uid_label_value(uid)
    assert labels.is_label_value(value) and len(value) <= 63
    assert (value == uid) is stored_as_is
    assert labels.uid_label_value(uid) == value  # deterministic
    item = {
        "labels": labels.marks(uid, "prod"),
        "metadata": {"items": [{"key": "proxy-operator-uid", "value": uid}]},
    }
    assert labels.uid_of(item) == uid  # the exact uid comes back, hashed label or not
    assert labels.owned_by(item, uid)
    assert not labels.owned_by(item, uid + "z")


def test_owned_by_label_only_and_list_filter():
    assert labels.owned_by({"labels": {"proxy-operator-uid": "u1"}}, "u1")
    assert not labels.owned_by({"labels": {}}, "u1")
    assert labels.uid_of({"labels": {"proxy-operator-uid": "u1"}}) == "u1"
    assert labels.list_filter("prod") == (
        '(labels.proxy-operator-managed = "true") AND (labels.proxy-operator-install = "prod")'
    )
