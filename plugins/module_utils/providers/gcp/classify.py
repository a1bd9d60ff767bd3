# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The one mapping from Compute Engine failures to error classes, and the Checker reasons.

Sources of failure, all classified here:

- ``google.api_core`` exceptions raised by a call (HTTP status plus ``error.errors[].reason``);
- ``OperationFailed``: an operation the API accepted that failed later (its ``error.errors[].code``
  and ``httpErrorStatusCode``), read back by ``get`` so an asynchronous insert failure reaches
  the caller instead of looking like NotFound;
- transport, auth and deadline errors, and a missing SDK.

Table (blueprint §3): 404 NotFound only where ``proves_missing`` names the instance asked
for (any other 404 is Transient: it cannot tell); 429, and 403 with reason quotaExceeded or
rateLimitExceeded, QuotaExceeded; 400, 401 and other 403s Permanent; 5xx, timeouts and anything
that is not an API answer Transient. A failed operation is never NotFound (its 404 means a
referenced image or machine type is missing): quota and capacity codes are QuotaExceeded,
other 4xx Permanent, the rest Transient.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
    CredentialsUnavailable,
    CredentialsUnsafe,
)

QUOTA_REASONS = frozenset({"quotaExceeded", "rateLimitExceeded", "userRateLimitExceeded"})
# Operation error codes that retrying later can fix: quota, and a zone out of capacity.
QUOTA_CODES = frozenset(
    {
        "QUOTA_EXCEEDED",
        "RATE_LIMIT_EXCEEDED",
        "ZONE_RESOURCE_POOL_EXHAUSTED",
        "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
    }
)


# Fixed differently from every shared reason: install a Python package where the module runs.
REASON_SDK_MISSING = "SDKMissing"


class SdkMissing(Exception):
    """google-cloud-compute is not installed where the module runs (fix: install it)."""


class CredentialsProblem(Exception):
    """The credentials file holds no valid service-account key, or no default credentials exist
    (a file that cannot be read at all is ``CredentialsUnavailable``: Transient)."""


class OperationFailed(Exception):
    """An accepted operation that ended with an error (``op`` is the REST Operation dict)."""

    def __init__(self, op: dict):
        self.op = op
        error = op.get("error") or {}
        self.codes = tuple(e.get("code", "") for e in error.get("errors") or [])
        self.messages = tuple(e.get("message", "") for e in error.get("errors") or [])
        self.http_status = int(op.get("httpErrorStatusCode") or 0)
        super().__init__(
            "operation %s (%s) failed: %s"
            % (
                op.get("name", "?"),
                op.get("operationType", "?"),
                "; ".join("%s: %s" % pair for pair in zip(self.codes, self.messages, strict=False))
                or op.get("httpErrorMessage", "unknown error"),
            )
        )


def _api_exceptions():
    try:
        from google.api_core import exceptions as api_exceptions
    except ImportError:  # no SDK: nothing can be an API error
        return None
    return api_exceptions


def _auth_exceptions():
    try:
        from google.auth import exceptions as auth_exceptions
    except ImportError:
        return None
    return auth_exceptions


def status_of(exc: BaseException) -> int:
    """The HTTP status of an API error, 0 when ``exc`` is not one."""
    api_exceptions = _api_exceptions()
    if api_exceptions is not None and isinstance(exc, api_exceptions.GoogleAPICallError):
        code = exc.code
        return int(code) if isinstance(code, int) else 0
    return 0


def reasons_of(exc: BaseException) -> tuple:
    """The ``error.errors[].reason`` values of an API error, plus the ErrorInfo reason if any."""
    found = []
    for item in getattr(exc, "errors", None) or []:
        if isinstance(item, dict) and item.get("reason"):
            found.append(item["reason"])
    reason = getattr(exc, "reason", None)
    if isinstance(reason, str) and reason and reason not in found:
        found.append(reason)
    return tuple(found)


def api_not_found(exc: BaseException) -> bool:
    """A 404 that is the Compute API's own answer (reason ``notFound``), about some resource."""
    return status_of(exc) == 404 and "notFound" in reasons_of(exc)


def proves_missing(exc: BaseException, resource: str, *containers: str) -> bool:
    """Whether ``exc`` is the API saying that ``resource`` (``projects/p/zones/z/instances/n``)
    does not exist: a 404 with reason ``notFound`` whose message names exactly that resource,
    or one of ``containers`` (a zone that does not exist holds no instance).

    Any other 404 (a wrong ``apiEndpoint``, a proxy's HTML page, a missing project or zone) says
    nothing about the instance: taken as "gone" it would create a duplicate or release a Proxy
    whose VM still runs (blueprint §2)."""
    if not api_not_found(exc):
        return False
    message = getattr(exc, "message", None) or str(exc)
    return any(("'%s'" % path) in message for path in (resource, *containers))


_BY_TYPE = (
    (CredentialsUnavailable, errors.TRANSIENT),  # helpers/credential_files.py: a Secret may still be mounting
    ((SdkMissing, CredentialsProblem, CredentialsUnsafe), errors.PERMANENT),
    (DeadlineExceeded, errors.TRANSIENT),
)


def classify(exc: BaseException) -> str:
    """The error class of any failure a gcp call can raise."""
    known = errors.class_by_type(exc, _BY_TYPE)
    if known:
        return known
    if isinstance(exc, OperationFailed):
        if QUOTA_CODES.intersection(exc.codes):
            return errors.QUOTA_EXCEEDED
        if 400 <= exc.http_status < 500:
            return errors.PERMANENT
        return errors.TRANSIENT
    status = status_of(exc)
    if status:
        return classify_status(status, reasons_of(exc))
    auth_exceptions = _auth_exceptions()
    if auth_exceptions is not None:
        if isinstance(exc, auth_exceptions.DefaultCredentialsError):
            return errors.PERMANENT
        if isinstance(exc, auth_exceptions.RefreshError):
            # A refused refresh (revoked key, disabled account) stays refused; a network
            # failure while refreshing is marked retryable by google-auth.
            return errors.TRANSIENT if getattr(exc, "retryable", False) else errors.PERMANENT
    return errors.TRANSIENT


def classify_status(status: int, reasons=()) -> str:
    """The table for an HTTP status and its reasons (also used by tests and the fake's docs)."""
    if status == 404:
        return errors.TRANSIENT  # NotFound needs proof of which resource: see proves_missing
    if status == 429:
        return errors.QUOTA_EXCEEDED
    if status == 403 and QUOTA_REASONS.intersection(reasons):
        return errors.QUOTA_EXCEEDED
    if status in (400, 401, 403):
        return errors.PERMANENT
    if 400 <= status < 500 and status not in (408, 409, 412):
        # Other client errors (405, 413, ...) will not go away by retrying the same call.
        return errors.PERMANENT
    return errors.TRANSIENT


def describe(exc: BaseException) -> str:
    """The raw status and reasons, for the log line that classify's collapse would hide."""
    status = status_of(exc)
    if status:
        return "status=%d reasons=%s" % (status, ",".join(reasons_of(exc)) or "-")
    if isinstance(exc, OperationFailed):
        return "operation status=%d codes=%s" % (exc.http_status, ",".join(exc.codes) or "-")
    return "error=%s" % type(exc).__name__


def check_reason(exc: BaseException) -> str:
    """The shared Checker reason for a failed probe."""
    if isinstance(exc, DeadlineExceeded):
        return contract.REASON_TIMEOUT
    if type(exc).__name__ in ("Timeout", "ReadTimeout", "ConnectTimeout", "DeadlineExceeded"):
        return contract.REASON_TIMEOUT
    status = status_of(exc)
    if status == 401:
        return contract.REASON_UNAUTHORIZED
    if status == 403:
        return contract.REASON_FORBIDDEN
    if status:
        return contract.REASON_API_ERROR
    if isinstance(exc, SdkMissing):
        return REASON_SDK_MISSING
    if isinstance(exc, CredentialsProblem | CredentialsUnavailable | CredentialsUnsafe):
        return contract.REASON_UNAUTHORIZED
    auth_exceptions = _auth_exceptions()
    if auth_exceptions is not None and isinstance(
        exc, (auth_exceptions.DefaultCredentialsError, auth_exceptions.RefreshError)
    ):
        return contract.REASON_UNAUTHORIZED
    return contract.REASON_UNREACHABLE
