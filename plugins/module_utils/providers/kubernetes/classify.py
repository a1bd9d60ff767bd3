# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The one mapping from kubernetes-client failures to the contract's error classes.

Called by every provider method (through ``provider._fail``); table-tested in
tests/unit/test_kubernetes_classify.py with the bodies a real API server sends. The hard case
the reference gave up on: a 403 can be RBAC (Permanent: fix the Role) or a ResourceQuota
(QuotaExceeded: wait or raise the quota). The API server's quota admission says so in the
Status message ("exceeded quota: ..."), so it is told apart here. A 403 because the namespace's
default ServiceAccount does not exist yet (a namespace created a moment ago), because the
namespace is being deleted, or because a new quota has not been counted yet, is Transient: it
resolves without anyone editing anything.
"""

from __future__ import annotations

import json

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
    CredentialsUnavailable,
    CredentialsUnsafe,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import sdk

QUOTA_MARKERS = ("exceeded quota:",)
TRANSIENT_403_MARKERS = (
    "error looking up service account",  # the namespace's default ServiceAccount is not there yet
    "because it is being terminated",  # the namespace goes away
    "status unknown for quota",  # a new ResourceQuota the controller has not counted yet
)
PERMANENT_STATUSES = (400, 401, 403, 405, 406, 415, 422)


def status_of(exc) -> tuple:
    """``(code, reason, message)`` of an ``ApiException``, from its Status body when it has one."""
    code = int(getattr(exc, "status", 0) or 0)
    reason = getattr(exc, "reason", "") or ""
    message = ""
    body = getattr(exc, "body", None)
    if body:
        try:
            status = json.loads(body)
        except (TypeError, ValueError):
            status = None
        if isinstance(status, dict):
            reason = status.get("reason") or reason
            message = status.get("message") or ""
            code = int(status.get("code") or code)
    return code, reason, message


def status_body(exc) -> dict:
    """The Kubernetes ``Status`` object of an ``ApiException``'s body, ``{}`` when it has none
    (an HTML page from an ingress, an empty 404 from a wrong URL)."""
    body = getattr(exc, "body", None)
    try:
        status = json.loads(body) if body else None
    except (TypeError, ValueError):
        return {}
    return status if isinstance(status, dict) and status.get("kind") == "Status" else {}


def proves_missing(exc, kind: str, name: str) -> bool:
    """Whether the API server said that the ``kind`` (plural, e.g. ``pods``) named ``name``
    does not exist: a 404 ``Status`` of reason NotFound about exactly that object. Nothing else
    proves it (blueprint §2: a false NotFound creates duplicates or releases a running Pod)."""
    if int(getattr(exc, "status", 0) or 0) != 404:
        return False
    status = status_body(exc)
    details = status.get("details") or {}
    return status.get("reason") == "NotFound" and details.get("kind") == kind and details.get("name") == name


def missing_kind(exc) -> str:
    """The kind a NotFound ``Status`` is about (``namespaces`` for a create into a missing one)."""
    status = status_body(exc)
    return (status.get("details") or {}).get("kind", "") if status.get("reason") == "NotFound" else ""


_BY_TYPE = (
    (DeadlineExceeded, errors.TRANSIENT),
    (CredentialsUnavailable, errors.TRANSIENT),  # helpers/credential_files.py: a Secret may still be mounting
    (
        (sdk.SDKMissing, sdk.ConfigException, CredentialsUnsafe),
        errors.PERMANENT,
    ),  # install it, fix the kubeconfig
)


def classify(exc: BaseException) -> str:
    known = errors.class_by_type(exc, _BY_TYPE)
    if known:
        return known
    if isinstance(exc, sdk.ApiException):
        code, _reason, message = status_of(exc)
        if code == 404:
            # Only the API server's own NotFound; which object it is about is the caller's
            # question (proves_missing). A 404 without a Status is not the API server talking.
            return errors.NOT_FOUND if status_body(exc).get("reason") == "NotFound" else errors.TRANSIENT
        if code == 403:
            lowered = message.lower()
            if any(marker in lowered for marker in QUOTA_MARKERS):
                return errors.QUOTA_EXCEEDED
            if any(marker in lowered for marker in TRANSIENT_403_MARKERS):
                return errors.TRANSIENT
            return errors.PERMANENT
        if code in PERMANENT_STATUSES:
            return errors.PERMANENT
        return errors.TRANSIENT  # 409 conflicts, 410 expired continues, 429, 5xx, status 0
    return errors.TRANSIENT  # transport errors, timeouts and anything unknown retry
