"""libvirt/image.is_cached over a connection a batch's threads share: one confirmation of the
marker is enough, a "no" must be seen MARKER_READS times (test_batch_of_twenty_on_one_host_dials_once
failed in CI when one read came back as something that was not the marker, and a base in use was
then refused as untrusted)."""

from __future__ import annotations

import logging

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import image

DIGEST = "ab" * 32
IMG = image.Image("base", "https://example.invalid/base.qcow2?token=s3cret", DIGEST, "qcow2", "bios")
MARKER = IMG.marker_text(DIGEST)


class Answers:
    """A connection whose listings and marker reads answer in the order given."""

    def __init__(self, listings: list, reads: list):
        self.listings, self.reads = list(listings), list(reads)
        self.calls = 0

    def volume_names(self, pool: str) -> list:
        self.calls += 1
        return self.listings.pop(0) if len(self.listings) > 1 else self.listings[0]

    def volume_download(self, pool: str, name: str, limit: int) -> bytes:
        assert name == IMG.marker
        return self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]


BOTH = [IMG.marker, IMG.volume, "proxy-a.kvm2.qcow2"]


def test_a_read_that_is_not_the_marker_is_read_again(caplog):
    conn = Answers([BOTH], [b'{"uid": "another volume"} 2', MARKER])
    with caplog.at_level(logging.WARNING):
        assert image.is_cached(conn, "default", IMG) is True
    assert "confirmed after 1 reads" in caplog.text
    assert "s3cret" not in caplog.text and DIGEST not in caplog.text  # sizes only, never the URL


def test_a_listing_that_misses_the_marker_is_listed_again():
    conn = Answers([[IMG.volume], BOTH], [MARKER])
    assert image.is_cached(conn, "default", IMG) is True


def test_a_short_read_is_read_again():
    conn = Answers([BOTH], [MARKER[:10], MARKER])
    assert image.is_cached(conn, "default", IMG) is True


def test_a_wrong_marker_is_untrusted_after_every_read_said_so(caplog):
    conn = Answers([BOTH], [("%s %s\n" % ("cd" * 32, IMG.url)).encode()])
    with caplog.at_level(logging.INFO):
        assert image.is_cached(conn, "default", IMG) is False
    assert conn.calls == image.MARKER_READS
    assert "s3cret" not in caplog.text


def test_a_base_never_fetched_is_not_cached():
    conn = Answers([["proxy-a.kvm2.qcow2"]], [b""])
    assert image.is_cached(conn, "default", IMG) is False
