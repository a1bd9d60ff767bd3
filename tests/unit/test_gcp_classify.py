"""The gcp ``classify`` table (blueprint §3) and the Checker reasons, on real google.api_core,
google.auth and requests exceptions, failed operations and deadline errors."""

from __future__ import annotations

import pytest
import requests
from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.classify import (
    REASON_SDK_MISSING,
    CredentialsProblem,
    OperationFailed,
    SdkMissing,
    check_reason,
    classify,
    describe,
    proves_missing,
)
from unit.gcp_fake_api import api_error


def failed_op(code: str, http: int) -> OperationFailed:
    return OperationFailed(
        {
            "name": "operation-1",
            "operationType": "insert",
            "status": "DONE",
            "error": {"errors": [{"code": code, "message": "m"}]},
            "httpErrorStatusCode": http,
        }
    )


TABLE = [
    # A 404 alone never proves which resource is missing (proves_missing does): Transient.
    ("404 not found", api_error(404, "notFound"), errors.TRANSIENT),
    ("404 without a body", api_error(404), errors.TRANSIENT),
    ("429 rate limit", api_error(429, "rateLimitExceeded"), errors.QUOTA_EXCEEDED),
    ("429 without reason", api_error(429), errors.QUOTA_EXCEEDED),
    ("403 quotaExceeded", api_error(403, "quotaExceeded"), errors.QUOTA_EXCEEDED),
    ("403 rateLimitExceeded", api_error(403, "rateLimitExceeded"), errors.QUOTA_EXCEEDED),
    ("403 forbidden", api_error(403, "forbidden"), errors.PERMANENT),
    ("403 no reason", api_error(403), errors.PERMANENT),
    ("400 invalid", api_error(400, "invalid"), errors.PERMANENT),
    ("401 unauthenticated", api_error(401, "required"), errors.PERMANENT),
    ("405 method", api_error(405), errors.PERMANENT),
    ("409 conflict outside create", api_error(409, "alreadyExists"), errors.TRANSIENT),
    ("412 precondition", api_error(412, "conditionNotMet"), errors.TRANSIENT),
    ("500 backend", api_error(500, "backendError"), errors.TRANSIENT),
    ("502", api_error(502), errors.TRANSIENT),
    ("503 unavailable", api_error(503, "backendError"), errors.TRANSIENT),
    ("504 deadline", api_exceptions.DeadlineExceeded("slow"), errors.TRANSIENT),
    ("requests timeout", requests.exceptions.ReadTimeout("read timed out"), errors.TRANSIENT),
    ("connection refused", requests.exceptions.ConnectionError("refused"), errors.TRANSIENT),
    ("our deadline", DeadlineExceeded("get ran past its deadline"), errors.TRANSIENT),
    ("not an SDK error", RuntimeError("boom"), errors.TRANSIENT),
    ("no default credentials", auth_exceptions.DefaultCredentialsError("none"), errors.PERMANENT),
    ("refresh refused", auth_exceptions.RefreshError("invalid_grant"), errors.PERMANENT),
    ("refresh retryable", auth_exceptions.RefreshError("net", retryable=True), errors.TRANSIENT),
    ("auth transport", auth_exceptions.TransportError("dns"), errors.TRANSIENT),
    ("sdk missing", SdkMissing("install it"), errors.PERMANENT),
    ("credentials file", CredentialsProblem("unreadable"), errors.PERMANENT),
    ("op quota", failed_op("QUOTA_EXCEEDED", 403), errors.QUOTA_EXCEEDED),
    ("op stockout", failed_op("ZONE_RESOURCE_POOL_EXHAUSTED", 503), errors.QUOTA_EXCEEDED),
    ("op bad image (404 is not NotFound)", failed_op("RESOURCE_NOT_FOUND", 404), errors.PERMANENT),
    ("op bad machine type", failed_op("INVALID_FIELD_VALUE", 400), errors.PERMANENT),
    ("op internal", failed_op("INTERNAL_ERROR", 500), errors.TRANSIENT),
    ("already classified", errors.quota_exceeded("get", "g", "", "x"), errors.QUOTA_EXCEEDED),
]


@pytest.mark.parametrize(("case", "exc", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_classify_table(case, exc, expected):
    assert classify(exc) == expected, case


def test_every_class_but_not_found_is_reachable():
    """NotFound needs proof of which resource is missing: the provider asks ``proves_missing``."""
    assert {row[2] for row in TABLE} == set(errors.CLASSES) - {errors.NOT_FOUND}


def test_error_body_reasons_survive_the_rest_transport_parsing():
    """from_http_response is what the REST transport calls on an error answer."""

    class _Req:
        method = "GET"
        url = "http://127.0.0.1/compute/v1/projects/p/aggregated/instances"

    class _Resp:
        status_code = 403
        request = _Req()
        text = ""

        @staticmethod
        def json():
            return {
                "error": {
                    "code": 403,
                    "message": "Quota exceeded",
                    "errors": [
                        {"message": "Quota exceeded", "domain": "usageLimits", "reason": "quotaExceeded"}
                    ],
                    "status": "PERMISSION_DENIED",
                }
            }

    exc = api_exceptions.from_http_response(_Resp())
    assert classify(exc) == errors.QUOTA_EXCEEDED
    assert describe(exc) == "status=403 reasons=quotaExceeded"


def test_describe_names_status_and_reasons():
    assert describe(api_error(429, "rateLimitExceeded")) == "status=429 reasons=rateLimitExceeded"
    assert describe(api_error(500)) == "status=500 reasons=-"
    assert describe(failed_op("QUOTA_EXCEEDED", 403)) == "operation status=403 codes=QUOTA_EXCEEDED"
    assert describe(RuntimeError("x")) == "error=RuntimeError"


REASONS = [
    (DeadlineExceeded("late"), contract.REASON_TIMEOUT),
    (requests.exceptions.ReadTimeout("slow"), contract.REASON_TIMEOUT),
    (api_exceptions.DeadlineExceeded("slow"), contract.REASON_TIMEOUT),
    (api_error(401, "required"), contract.REASON_UNAUTHORIZED),
    (api_error(403, "forbidden"), contract.REASON_FORBIDDEN),
    (api_error(500), contract.REASON_API_ERROR),
    (api_error(429, "rateLimitExceeded"), contract.REASON_API_ERROR),
    (requests.exceptions.ConnectionError("refused"), contract.REASON_UNREACHABLE),
    (auth_exceptions.DefaultCredentialsError("none"), contract.REASON_UNAUTHORIZED),
    (CredentialsProblem("bad key"), contract.REASON_UNAUTHORIZED),
    (SdkMissing("pip install"), REASON_SDK_MISSING),
]


@pytest.mark.parametrize(
    ("exc", "expected"), REASONS, ids=[type(r[0]).__name__ + "-" + r[1] for r in REASONS]
)
def test_check_reason_table(exc, expected):
    assert check_reason(exc) == expected


@pytest.mark.parametrize(
    "error,proof",
    [
        (api_error(404, "notFound", "The resource 'projects/p/zones/z/instances/n' was not found"), True),
        (api_error(404, "notFound", "The resource 'projects/p/zones/z' was not found"), True),
        (api_error(404, "notFound", "The resource 'projects/p' was not found"), False),
        (api_error(404, "notFound", "The resource 'projects/p/zones/z/instances/n2' was not found"), False),
        (api_error(404, "", "The resource 'projects/p/zones/z/instances/n' was not found"), False),
        (api_error(404), False),
        (api_error(403, "notFound", "The resource 'projects/p/zones/z/instances/n' was not found"), False),
    ],
)
def test_proves_missing_only_for_the_instance_or_its_zone(error, proof):
    assert proves_missing(error, "projects/p/zones/z/instances/n", "projects/p/zones/z") is proof
