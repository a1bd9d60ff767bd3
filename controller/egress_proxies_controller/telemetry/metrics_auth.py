"""Authenticated metrics, as controller-runtime serves them (``filters.WithAuthenticationAndAuthorization``).

Who calls it: ``metrics.serve`` for the metrics port, unless ``--metrics-insecure``. What it
guarantees: the port speaks TLS only, with the serving certificate read from
``--metrics-cert-dir`` (``tls.crt`` and ``tls.key``, the keys of a ``kubernetes.io/tls`` Secret)
once at start, or, when that directory holds neither, a self-signed one made in memory (as
controller-runtime does without a certificate); every request must carry a bearer token that a
TokenReview authenticates (else 401) and whose user a SubjectAccessReview allows ``get`` on the
request's path as a non-resource URL (else 403). Answers are cached as controller-runtime caches
them (an authentication for 1 minute; an authorisation 5 minutes when allowed, 30 seconds when
denied), keyed by the token's digest, never the token. A review that fails is a 500 and is not
cached. The reviews go through kube/client.py (the one place the Kubernetes client is used).
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import os
import ssl
import tempfile
import threading
import time

from ..kube import errors

log = logging.getLogger("egress_proxies_controller.telemetry.metrics_auth")

AUTHN_TTL = 60.0
ALLOW_TTL = 300.0
DENY_TTL = 30.0
CACHE_MAX = 4096
CERT, KEY = "tls.crt", "tls.key"


class CertificateError(Exception):
    """The certificate files cannot be used (named in the message)."""


def tls_context(cert_dir: str) -> ssl.SSLContext:
    """A server context from ``cert_dir``'s tls.crt and tls.key; self-signed when it has neither."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    cert, key = (os.path.join(cert_dir, name) if cert_dir else "" for name in (CERT, KEY))
    present = [path for path in (cert, key) if path and os.path.exists(path)]
    if not present:
        if cert_dir:
            log.warning(
                "%s has no %s and %s: serving metrics with a self-signed certificate", cert_dir, CERT, KEY
            )
        with tempfile.TemporaryDirectory() as scratch:  # ssl loads certificates from files only
            cert, key = self_signed(scratch)
            context.load_cert_chain(cert, key)
        return context
    if len(present) == 1:
        raise CertificateError(
            "%s has %s but not %s" % (cert_dir, *((CERT, KEY) if present[0] == cert else (KEY, CERT)))
        )
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise CertificateError("%s and %s are not a certificate and its key: %s" % (cert, key, exc)) from None
    return context


def self_signed(directory: str, dns_names=("localhost",), ip_addresses=()) -> tuple[str, str]:
    """tls.crt and tls.key (0600) of a new self-signed certificate for these names, in ``directory``."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "egress-proxies-controller-metrics")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(n) for n in dns_names]
                + [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = os.path.join(directory, CERT), os.path.join(directory, KEY)
    with open(cert_path, "wb") as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    return cert_path, key_path


class _TTLCache:
    def __init__(self):
        self._items: dict = {}
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0] < time.monotonic():
                self._items.pop(key, None)
                return None
            return item[1]

    def put(self, key, value, ttl: float) -> None:
        with self._lock:
            if len(self._items) >= CACHE_MAX:
                now = time.monotonic()
                self._items = {k: v for k, v in self._items.items() if v[0] >= now}
                if len(self._items) >= CACHE_MAX:
                    self._items.clear()
            self._items[key] = (time.monotonic() + ttl, value)


class Authorizer:
    """``check(headers, path)`` -> (HTTP code, reason): 200 to serve, else 401, 403 or 500.

    ``reviews`` has ``token_review(token) -> user dict or None`` and
    ``access_review(user, path, verb) -> bool`` (kube/client.py's Kube has both)."""

    def __init__(self, reviews):
        self.reviews = reviews
        self.users = _TTLCache()
        self.decisions = _TTLCache()

    def check(self, authorization: str | None, path: str) -> tuple[int, str]:
        scheme, _sep, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return 401, "Unauthorized"
        digest = hashlib.sha256(token.encode()).hexdigest()
        try:
            user = self.users.get(digest)
            if user is None:
                user = self.reviews.token_review(token) or {}
                self.users.put(digest, user, AUTHN_TTL)
            if not user:
                return 401, "Unauthorized"
            decision_key = (digest, path)
            allowed = self.decisions.get(decision_key)
            if allowed is None:
                allowed = self.reviews.access_review(user, path, "get")
                self.decisions.put(decision_key, allowed, ALLOW_TTL if allowed else DENY_TTL)
        except Exception as exc:  # the API server did not answer: nothing cached, try again next time
            log.warning("metrics: authenticating a request failed: %s", errors.describe(exc))
            return 500, "Internal Server Error"
        if not allowed:
            return 403, "Forbidden (user %r may not get %s)" % (user.get("username", ""), path)
        return 200, "OK"
