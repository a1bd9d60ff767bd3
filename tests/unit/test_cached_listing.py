"""The inventory cache's shape check (plugins/plugin_utils/cached_listing.py): what ``_list``
stores passes, and each way of differing is named by its field, never by its value."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.plugin_utils import cached_listing
from ansible_collections.crawl.egress_proxies.plugins.plugin_utils.proxy_hosts import host_record

INSTANCE = {
    "id": "loc/proxy-abc",
    "name": "proxy-abc",
    "uid": "team-a-1",
    "provider": "loc",
    "state": "Running",
    "ip": "127.77.0.1",
    "created_at": "2026-12-06T00:00:00Z",
    "installation": "prod",
}


def listing(**changes) -> dict:
    good = {
        "hosts": [host_record(INSTANCE, "local", 3128)],
        "errors": [{"provider": "gce", "error_class": "Transient", "msg": "timed out"}],
        "warnings": ["one warning"],
    }
    good.update(changes)
    return good


def test_what_the_plugin_stores_passes():
    assert cached_listing.problem(listing()) == ""
    assert cached_listing.problem({"hosts": [], "errors": [], "warnings": []}) == ""


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("secret-ish text", "not a mapping"),
        (listing(hosts=None), "hosts: not a list"),
        ({"hosts": [], "errors": []}, "warnings: missing"),
        (
            listing(hosts=[dict(host_record(INSTANCE, "local", 3128), port="3128")]),
            "hosts[0].port: not an integer",
        ),
        (
            listing(hosts=[dict(host_record(INSTANCE, "local", 3128), port=True)]),
            "hosts[0].port: not an integer",
        ),
        (listing(hosts=[dict(host_record(INSTANCE, "local", 3128), ip=["x"])]), "hosts[0].ip: not a string"),
        (listing(errors=[{"provider": "gce", "msg": "m"}]), "errors[0].error_class: missing"),
        (listing(warnings=[{"w": 1}]), "warnings[0]: not a string"),
    ],
)
def test_each_difference_is_named_by_its_field(entry, expected):
    found = cached_listing.problem(entry)
    assert found == expected
    assert "secret-ish" not in found and "3128" not in found
