"""Base image volumes against the real libvirtd: named by content, kept while any volume backs
onto them, collected with their last user, shared by keys of one digest, and a base of the old
key-based name left alone."""

from __future__ import annotations

import contextlib
import posixpath
import uuid
import xml.etree.ElementTree as ET

import libvirt
import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import ids
from contract import libvirt_fixtures

pytestmark = pytest.mark.libvirt

libvirt_host = libvirt_fixtures.libvirt_host
image_host = libvirt_fixtures.image_host
backend = libvirt_fixtures.backend


def dl() -> Deadline:
    return Deadline(60.0)


def base_of(sha256: str) -> str:
    return ids.base_volume(sha256[: ids.DIGEST_CHARS])


def pool(host):
    found = host.direct().storagePoolLookupByName(host.pool)
    found.refresh(0)
    return found


def backing(host, volume: str) -> str:
    text = pool(host).storageVolLookupByName(volume).XMLDesc(0)
    return ET.fromstring(text).findtext("backingStore/path") or ""


def content(host, volume: str) -> bytes:
    """The volume's bytes, read by libvirt (the pool directory is in the host's namespace)."""
    vol = pool(host).storageVolLookupByName(volume)
    stream = host.direct().newStream(0)
    vol.download(stream, 0, 0, 0)
    chunks: list = []
    stream.recvAll(lambda _s, data, buf: buf.append(data), chunks)
    stream.finish()
    return b"".join(chunks)


def put_volume(host, name: str, data: bytes) -> None:
    vol = pool(host).createXML(
        "<volume><name>%s</name><capacity unit='bytes'>%d</capacity>"
        "<target><format type='raw'/></target></volume>" % (name, len(data)),
        0,
    )
    stream = host.direct().newStream(0)
    vol.upload(stream, 0, len(data), 0)
    stream.send(data)
    stream.finish()


@contextlib.contextmanager
def foreign_overlay(host, base: str):
    """Someone else's qcow2 volume backing onto ``base``, made behind the provider's back."""
    name = "foreign-%s.qcow2" % uuid.uuid4().hex[:8]
    path = pool(host).storageVolLookupByName(base).path()
    pool(host).createXML(
        "<volume><name>%s</name><capacity unit='bytes'>%d</capacity><target><format type='qcow2'/>"
        "</target><backingStore><path>%s</path><format type='qcow2'/></backingStore></volume>"
        % (name, 1024**3, path),
        0,
    )
    try:
        yield name
    finally:
        with contextlib.suppress(libvirt.libvirtError):
            pool(host).storageVolLookupByName(name).delete(0)


def overlay(req) -> str:
    return ids.overlay_volume(req.name, "kvm2")


def test_editing_an_image_under_its_key_keeps_the_base_its_overlays_use(backend, image_host):
    old_path, old_data, old_sha = image_host.distinct("edit-old")
    new_path, new_data, new_sha = image_host.distinct("edit-new")
    before = backend.build(images={"edit": {"url": image_host.server.url(old_path), "sha256": old_sha}})
    first = backend.request(str(uuid.uuid4()), image="edit")
    before.create(first, dl())
    first_backing = backing(backend.host, overlay(first))
    after = backend.build(images={"edit": {"url": image_host.server.url(new_path), "sha256": new_sha}})
    second = backend.request(str(uuid.uuid4()), image="edit")
    after.create(second, dl())
    # the first guest's disk still backs onto the bytes it was made on; the new one onto the new
    assert content(backend.host, posixpath.basename(first_backing)) == old_data
    second_backing = backing(backend.host, overlay(second))
    assert second_backing != first_backing
    assert content(backend.host, posixpath.basename(second_backing)) == new_data
    assert posixpath.basename(second_backing) == base_of(new_sha)


def test_a_base_is_collected_with_its_last_user_and_never_before(backend, image_host):
    """Collected when the last volume on it goes and no catalogue image names it any more; kept
    while anything backs onto it (ours or anyone's), and kept as a cache while the catalogue
    still names it."""
    path, _data, sha256 = image_host.distinct("collect")
    other_path, _other, other_sha = image_host.distinct("collect-edited")
    provider = backend.build(images={"c": {"url": image_host.server.url(path), "sha256": sha256}})
    a, b, c = (backend.request(str(uuid.uuid4()), image="c") for _n in range(3))
    a_id, b_id = provider.create(a, dl()), provider.create(b, dl())
    base = posixpath.basename(backing(backend.host, overlay(a)))
    provider.delete(a_id, dl())
    assert {base, base + ids.MARKER_SUFFIX} <= set(backend.host.volumes())  # b still uses it
    with foreign_overlay(backend.host, base):
        provider.delete(b_id, dl())
        assert {base, base + ids.MARKER_SUFFIX} <= set(backend.host.volumes())  # so does someone else
    c_id = provider.create(c, dl())
    assert image_host.server.requests[path] == 1  # the kept base was trusted, not fetched again
    edited = backend.build(images={"c": {"url": image_host.server.url(other_path), "sha256": other_sha}})
    edited.delete(c_id, dl())  # the last user, and the catalogue names other bytes now
    assert base not in backend.host.volumes() and base + ids.MARKER_SUFFIX not in backend.host.volumes()


def test_a_base_the_catalogue_names_stays_cached_without_users(backend, image_host):
    path, _data, sha256 = image_host.distinct("cached")
    provider = backend.build(images={"k": {"url": image_host.server.url(path), "sha256": sha256}})
    req = backend.request(str(uuid.uuid4()), image="k")
    provider.delete(provider.create(req, dl()), dl())
    assert {base_of(sha256), base_of(sha256) + ids.MARKER_SUFFIX} <= set(backend.host.volumes())
    provider.delete(provider.create(backend.request(str(uuid.uuid4()), image="k"), dl()), dl())
    assert image_host.server.requests[path] == 1


def test_two_keys_with_one_digest_share_one_base(backend, image_host):
    path, data, sha256 = image_host.distinct("shared")
    other = path.replace(".qcow2", "-mirror.qcow2")
    image_host.server.files[other] = data
    provider = backend.build(
        images={
            "one": {"url": image_host.server.url(path), "sha256": sha256},
            "two": {"url": image_host.server.url(other), "sha256": sha256},
        }
    )
    first, second = (
        backend.request(str(uuid.uuid4()), image="one"),
        backend.request(str(uuid.uuid4()), image="two"),
    )
    provider.create(first, dl())
    provider.create(second, dl())
    assert backing(backend.host, overlay(first)) == backing(backend.host, overlay(second))
    assert posixpath.basename(backing(backend.host, overlay(first))) == base_of(sha256)
    assert image_host.server.requests.get(other, 0) == 0
    assert [v for v in backend.host.volumes() if v.startswith(ids.BASE_PREFIX) and sha256[:32] in v] == [
        base_of(sha256),
        base_of(sha256) + ids.MARKER_SUFFIX,
    ]


def test_a_legacy_base_in_use_is_neither_replaced_nor_reused(backend, image_host):
    """A base of the old key-based name (``egress-image-<key>``) that a disk backs onto, and
    the same key now naming other content: the old base is left as it is."""
    old_path, old_data, old_sha = image_host.distinct("legacy-old")
    new_path, new_data, new_sha = image_host.distinct("legacy-new")
    key = "legacy%s" % uuid.uuid4().hex[:6]
    legacy = ids.LEGACY_BASE_PREFIX + key
    put_volume(backend.host, legacy, old_data)
    put_volume(backend.host, legacy + ids.MARKER_SUFFIX, b"%s %s\n" % (old_sha.encode(), old_path.encode()))
    try:
        with foreign_overlay(backend.host, legacy):
            provider = backend.build(
                images={key: {"url": image_host.server.url(new_path), "sha256": new_sha}}
            )
            req = backend.request(str(uuid.uuid4()), image=key)
            provider.create(req, dl())
            assert content(backend.host, legacy) == old_data
            assert posixpath.basename(backing(backend.host, overlay(req))) == base_of(new_sha)
            assert content(backend.host, base_of(new_sha)) == new_data
    finally:
        for name in (legacy + ids.MARKER_SUFFIX, legacy):
            with contextlib.suppress(libvirt.libvirtError):
                pool(backend.host).storageVolLookupByName(name).delete(0)
