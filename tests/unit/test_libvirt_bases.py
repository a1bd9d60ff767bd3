"""Base volumes over the in-memory fake: the collection's two steps against a create of another
process, a create that loses its base meanwhile, and a legacy (key-named) base collected with its
last user."""

from __future__ import annotations

import pytest
from fakes.libvirt_fake import FakeConnection, FakeHost

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ProviderError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import bases, ids
from unit.libvirt_support import BASE, IMAGE, make, request

MARKER = BASE + ids.MARKER_SUFFIX


def dl() -> Deadline:
    return Deadline(10.0)


def seeded(host: FakeHost, base: str = BASE) -> str:
    volumes = host.volumes()
    volumes[base] = {"capacity": len(IMAGE), "data": IMAGE, "backing": "", "xml": ""}
    volumes[base + ids.MARKER_SUFFIX] = {"capacity": 4, "data": b"abcd", "backing": "", "xml": ""}
    return "/pools/default/" + base


class OverlayAppears(FakeConnection):
    """Another process makes an overlay on the base right after the collector deletes the marker."""

    def __init__(self, host, path):
        super().__init__(host)
        self.path = path

    def volume_delete(self, pool, name):
        super().volume_delete(pool, name)
        if name == MARKER:
            self.host.volumes(pool)["theirs.qcow2"] = {
                "capacity": 1,
                "data": b"",
                "backing": self.path,
                "xml": "",
            }


def test_collection_puts_the_marker_back_when_an_overlay_appears_meanwhile():
    host = FakeHost()
    path = seeded(host)
    assert bases.collect(OverlayAppears(host, path), "default", path) == ""
    assert host.volumes()[MARKER]["data"] == b"abcd" and BASE in host.volumes()


def test_collection_removes_an_unused_base_marker_first():
    host = FakeHost()
    path = seeded(host)
    assert bases.collect(FakeConnection(host), "default", path) == BASE
    assert host.volumes() == {}
    deleted = [c[2][1] for c in host.calls if c[1] == "volume_delete"]
    assert deleted == [MARKER, BASE]


def test_collection_leaves_what_is_not_a_base():
    host = FakeHost()
    host.volumes()["someones-disk.qcow2"] = {"capacity": 1, "data": b"", "backing": "", "xml": ""}
    assert bases.collect(FakeConnection(host), "default", "/pools/default/someones-disk.qcow2") == ""
    assert "someones-disk.qcow2" in host.volumes()


def test_a_create_whose_base_is_collected_meanwhile_removes_its_overlay_and_is_transient(image_server):
    provider, _dialer, hosts = make(image_server)
    host = hosts["h1"]
    original = FakeConnection.volume_create

    def collected_after_overlay(self, pool, xml):
        original(self, pool, xml)
        if "<backingStore>" in xml:  # another process collects the base right now
            host.volumes(pool).pop(MARKER, None)

    FakeConnection.volume_create = collected_after_overlay
    try:
        with pytest.raises(ProviderError) as exc_info:
            provider.create(request(), dl())
    finally:
        FakeConnection.volume_create = original
    assert errors.class_of(exc_info.value) == errors.TRANSIENT and "collected" in str(exc_info.value)
    assert ids.overlay_volume(request().name, "kvm2") not in host.volumes()
    assert host.domains == {}


def test_a_legacy_base_goes_with_the_last_instance_on_it(image_server):
    provider, _dialer, hosts = make(image_server)
    host = hosts["h1"]
    provider_id = provider.create(request(), dl())
    legacy = ids.LEGACY_BASE_PREFIX + "tiny"
    path = seeded(host, legacy)
    host.volumes()[ids.overlay_volume(request().name, "kvm2")]["backing"] = path  # made before the rename
    provider.delete(provider_id, dl())
    assert legacy not in host.volumes() and legacy + ids.MARKER_SUFFIX not in host.volumes()
    assert BASE in host.volumes()  # never used by this instance's overlay (as far as libvirt says)
