# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Base images: resolving ``placement.image`` and the per-host image cache in the pool.

A base volume is named by its content (``ids.base_volume``: the sha256, or the URL of a bare-URL
image), never by its catalogue key: editing a key's ``url``/``sha256`` makes new instances use
another base and leaves the old one, which existing overlays back onto, untouched; two keys with
one digest share one base. bases.py finds a base's users and collects unused bases.

An image is downloaded once per host and pool, streamed from HTTP straight into a volume in
1 MiB chunks (never held whole in memory), its sha256 computed on the way. A marker volume
holding the digest and URL is written last, only after the whole body arrived and matched: an
image volume without a valid marker (a cut-off download, a crash) is never trusted, and is
deleted and fetched again. A sha256 mismatch leaves nothing behind and is Permanent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import urllib.error
import urllib.parse

from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
from ansible.module_utils.urls import SSLValidationError, open_url

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    bases,
    guard,
    ids,
    volumes,
    xmlbuild,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.classify import (
    Permanent,
    Transient,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.config import (
    check_http_url,
    check_identifier,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.backend_spans import backend_call

log = logging.getLogger("crawl.egress_proxies.providers.libvirt")

CHUNK = 1024 * 1024
CLOSE_SECONDS = 2.0
MARKER_LIMIT = 4096


@dataclasses.dataclass(frozen=True)
class Image:
    key: str  # the catalogue key, or ``url-<hash>`` for a bare URL (logs and bare-URL names)
    url: str
    sha256: str  # empty for a bare URL: then only the length is checked
    format: str
    firmware: str

    @property
    def content_id(self) -> str:
        return self.sha256[: ids.DIGEST_CHARS] if self.sha256 else self.key

    @property
    def volume(self) -> str:
        return ids.base_volume(self.content_id)

    @property
    def marker(self) -> str:
        return ids.base_marker_volume(self.content_id)

    def marker_text(self, digest: str) -> bytes:
        return ("%s %s\n" % (digest, self.url)).encode("utf-8")


def resolve(config, image: str) -> Image:
    """A catalogue key or an http(s) URL (qcow2, BIOS); ``Permanent`` for anything else."""
    if not image:
        raise Permanent("placement.image is required: a key of images or an http(s) URL")
    spec = config.images.get(image)
    if spec is not None:
        return Image(image, spec.url, spec.sha256, spec.format, spec.firmware)
    if image.startswith(("http://", "https://")):
        try:
            check_http_url(image)
        except ValueError as exc:
            raise Permanent("placement.image: %s" % exc) from None
        key = "url-" + hashlib.sha256(image.encode("utf-8")).hexdigest()[:16]
        check_identifier(key, "image key")
        return Image(key, image, "", "qcow2", "bios")
    known = ", ".join(sorted(config.images)) or "none configured"
    raise Permanent(
        "placement.image %r is neither a configured image (%s) nor an http(s) URL" % (image, known)
    )


# A marker read over a connection many items share (a batch's threads) has come back short, and
# once as something that was not the marker at all (test_batch_of_twenty_on_one_host_dials_once,
# twice in CI): a base is declared untrusted, and refused while anything backs onto it, only
# after this many listings and reads all failed to confirm it. A base that is truly not cached
# costs two more listings.
MARKER_READS = 3


def is_cached(conn, pool: str, image: Image) -> bool:
    """The marker exists and holds the configured digest (for a bare URL: names this URL), and
    the image volume exists. Anything else means: fetch again (when nothing uses the volume).
    One confirmation is enough; a "no" must be seen ``MARKER_READS`` times."""
    seen = []
    for _attempt in range(MARKER_READS):
        names = set(conn.volume_names(pool))
        if image.marker not in names or image.volume not in names:
            seen.append(
                "marker listed: %s, volume listed: %s" % (image.marker in names, image.volume in names)
            )
            continue
        raw = conn.volume_download(pool, image.marker, MARKER_LIMIT)
        text = raw.decode("utf-8", "replace").split()
        if len(text) == 2 and (text[0] == image.sha256 if image.sha256 else text[1] == image.url):
            if seen:
                log.warning(
                    "base volume %s confirmed after %d reads that did not: %s",
                    image.volume,
                    len(seen),
                    "; ".join(seen),
                )
            return True
        seen.append("marker of %d bytes, %d words, not this image's" % (len(raw), len(text)))
    log.info("base volume %s not cached: %s", image.volume, "; ".join(seen))
    return False


def check_unused(conn, pool: str, image: Image) -> None:
    """Before replacing an untrusted copy: ``Transient`` when a volume backs onto it."""
    users = bases.users(conn, pool, image.volume)
    if users:
        raise Transient(
            "base volume %s has no valid marker but %s back onto it: not replaced (a collection "
            "in progress restores the marker; otherwise restore it by hand)"
            % (image.volume, ", ".join(users))
        )


def span_attributes(image: Image) -> dict:
    """What the download's spans say: the catalogue key and the URL's host, never the URL (it
    may carry credentials or a signed query)."""
    return {
        "libvirt.image": image.key,
        "url.host": urllib.parse.urlsplit(image.url).hostname or "",
        "libvirt.sha256_configured": bool(image.sha256),
    }


def open_download(image: Image, timeout: float):
    """``(response, length)``; the body is read later, after the space precheck."""
    with backend_call("libvirt.download.open", span_attributes(image)) as span:
        response, length = _open_download(image, timeout, span)
        span.set_attribute("http.response.status_code", int(getattr(response, "status", 0) or 0))
        span.set_attribute("http.response.body.size", length)
        return response, length


def _open_download(image: Image, timeout: float, span):
    try:
        response = open_url(
            image.url, timeout=timeout, http_agent="crawl.egress_proxies", follow_redirects="safe"
        )
    except urllib.error.HTTPError as exc:
        span.set_attribute("http.response.status_code", exc.code)
        kind = Transient if exc.code == 429 or exc.code >= 500 else Permanent
        raise kind("image download %s: HTTP %d %s" % (image.url, exc.code, exc.reason)) from None
    except SSLValidationError as exc:
        raise Permanent("image download %s: TLS certificate not trusted: %s" % (image.url, exc)) from None
    except (urllib.error.URLError, OSError, UrlsConnectionError) as exc:
        raise Transient("image download %s failed: %s" % (image.url, getattr(exc, "reason", exc))) from None
    length = response.headers.get("Content-Length")
    if not length or not length.isdigit() or int(length) <= 0:
        response.close()
        raise Permanent(
            "image %s: the server sent no Content-Length (required to size the volume)" % image.url
        )
    return response, int(length)


def close_download(response) -> None:
    """Close the HTTP response within a few seconds: after an abandoned read, ``close`` waits
    for the reader that is still blocked on the socket, so it is left to finish on its own."""
    try:
        guard.run(response.close, (), CLOSE_SECONDS, Deadline(CLOSE_SECONDS), "close image download")
    except guard.CallAbandoned:
        log.warning("libvirt image download: closing the connection was abandoned")


def fill(conn, pool: str, image: Image, response, length: int, deadline, budgets) -> None:
    """Stream the body into a fresh image volume, verify it, then write the marker last (after
    ``check_unused``: an untrusted copy is replaced only when nothing backs onto it). The span
    ``libvirt.download`` holds the transfer and its volume calls."""
    with backend_call("libvirt.download", dict(span_attributes(image), **{"libvirt.pool": pool})) as span:
        _fill(conn, pool, image, response, length, deadline, budgets)
        span.set_attribute("libvirt.bytes", length)


def _fill(conn, pool: str, image: Image, response, length: int, deadline, budgets) -> None:
    for volume in (image.marker, image.volume):
        volumes.delete_if_present(conn, pool, volume)
    conn.volume_create(pool, xmlbuild.raw_volume_xml(image.volume, length))
    upload = conn.volume_upload(pool, image.volume, length)
    digest = hashlib.sha256()
    received = 0
    try:
        while True:
            deadline.check("image download")
            try:
                # One read can block for as long as bytes keep trickling in (the socket timeout
                # is per recv): bounded as a whole by the HTTP budget and the deadline.
                chunk = guard.run(response.read, (CHUNK,), budgets.http, deadline, "image download read")
            except (OSError, ValueError) as exc:
                raise Transient("image download %s cut off after %d bytes: %s" % (image.url, received, exc))
            if not chunk:
                break
            received += len(chunk)
            if received > length:
                raise Transient("image %s sent more than its Content-Length %d" % (image.url, length))
            digest.update(chunk)
            upload.send(chunk)
        if received != length:
            raise Transient("image download %s cut off: %d of %d bytes" % (image.url, received, length))
        if image.sha256 and digest.hexdigest() != image.sha256:
            raise Permanent(
                "image %s has sha256 %s, the config says %s" % (image.url, digest.hexdigest(), image.sha256)
            )
        upload.finish()
    except BaseException:
        upload.abort()
        _cleanup(conn, pool, image)
        raise
    marker = image.marker_text(digest.hexdigest())
    conn.volume_create(pool, xmlbuild.raw_volume_xml(image.marker, len(marker)))
    write = conn.volume_upload(pool, image.marker, len(marker))
    try:
        write.send(marker)
        write.finish()
    except BaseException:
        write.abort()
        _cleanup(conn, pool, image)
        raise
    log.info("libvirt image cached key=%s bytes=%d sha256=%s", image.key, length, digest.hexdigest())


def _cleanup(conn, pool: str, image: Image) -> None:
    """After a failed download, with its own short deadline (the operation's may be spent)."""
    spare = volumes.spare(conn, 15.0)
    for volume in (image.marker, image.volume):
        try:
            volumes.delete_if_present(spare, pool, volume)
        except Exception as exc:  # the marker is absent, so a leftover volume is never trusted
            log.warning("libvirt image cleanup of %s failed: %s", volume, exc)
