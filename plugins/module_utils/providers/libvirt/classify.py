# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The one mapping from libvirt, SSH, HTTP and local failures to error classes.

Rules, each with the caller it protects:

* NotFound only for ``get`` of a domain that does not exist: NotFound makes the reconciler
  create again or release a finalizer, so nothing that is not "gone" may produce it. A domain or
  volume vanishing inside ``create`` is Transient (the next try starts over).
* SSH authentication and host-key failures are Permanent: they need an admin, retrying cannot
  fix them (a gap of the reference's kvm). A credential file that is missing is Transient: a
  Secret may still be mounting.
* Bad XML, unsupported features, a missing pool, denied access: Permanent.
* Every other libvirt error, timeouts, abandoned calls, network trouble: Transient.
* Errors raised at their source with a class (``Permanent``, ``Transient``, ``Quota`` below)
  keep it; the pool/memory precheck is the only source of QuotaExceeded.
"""

from __future__ import annotations

import socket
import urllib.error

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
    CredentialsUnavailable,
    CredentialsUnsafe,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import backend
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.libvirt_backend import (
    LibraryMissing,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.metadata import (
    MarksError,
)


class Permanent(Exception):
    """Classified at the source: fixing the config, the request or the host resolves it."""


class Transient(Exception):
    """Classified at the source: retrying later may succeed."""


class Quota(Exception):
    """Classified at the source: the pool or the host's memory is too small right now."""


_PERMANENT_CODES = frozenset(
    {
        backend.ERR_NO_STORAGE_POOL,
        backend.ERR_XML_ERROR,
        backend.ERR_XML_DETAIL,
        backend.ERR_NO_SUPPORT,
        backend.ERR_INVALID_ARG,
        backend.ERR_AUTH_FAILED,
        backend.ERR_ACCESS_DENIED,
        backend.ERR_AUTH_UNAVAILABLE,
        backend.ERR_OPERATION_UNSUPPORTED,
        backend.ERR_CONFIG_UNSUPPORTED,
    }
)
_SSH_DOMAINS = frozenset({backend.FROM_SSH, backend.FROM_LIBSSH})
# What libssh2, libssh and OpenSSH say when the key or the host key is refused (seen against sshd 9.2).
_SSH_AUTH_TEXT = (
    "host key",
    "failed to authenticate",
    "authentication failed",
    "access denied",
    "permission denied",
    "was not accepted",
    "can't verify",
    "differs from stored identity",
)


def is_ssh_auth_failure(exc: BaseException) -> bool:
    if not isinstance(exc, backend.LibvirtCallError):
        return False
    if exc.code == backend.ERR_AUTH_FAILED:
        return True
    text = str(exc).lower()
    return (exc.domain in _SSH_DOMAINS or exc.code in (backend.ERR_SSH, backend.ERR_LIBSSH)) and any(
        marker in text for marker in _SSH_AUTH_TEXT
    )


_BY_TYPE = (
    (Quota, errors.QUOTA_EXCEEDED),
    ((Permanent, LibraryMissing, MarksError, CredentialsUnsafe), errors.PERMANENT),
    ((Transient, CredentialsUnavailable, DeadlineExceeded), errors.TRANSIENT),
)


def classify(op: str, exc: BaseException) -> str:
    known = errors.class_by_type(exc, _BY_TYPE)
    if known:
        return known
    if isinstance(exc, backend.LibvirtCallError):
        return _classify_libvirt(op, exc)
    if isinstance(exc, urllib.error.HTTPError):
        if exc.code == 429 or exc.code >= 500:
            return errors.TRANSIENT
        return errors.PERMANENT if 400 <= exc.code < 500 else errors.TRANSIENT
    if isinstance(exc, (urllib.error.URLError, socket.timeout, ConnectionError)):
        return errors.TRANSIENT
    return errors.TRANSIENT


def _classify_libvirt(op: str, exc: backend.LibvirtCallError) -> str:
    if exc.code == backend.ERR_NO_DOMAIN:
        return errors.NOT_FOUND if op == "get" else errors.TRANSIENT
    if is_ssh_auth_failure(exc):
        return errors.PERMANENT
    if exc.code in _PERMANENT_CODES:
        return errors.PERMANENT
    return errors.TRANSIENT
