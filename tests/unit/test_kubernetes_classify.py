"""The kubernetes provider's one ``classify`` and the check's reasons, as tables.

The Status bodies are what kube-apiserver sends (the quota and RBAC ones are also produced by
the real API server in tests/cluster/test_kubernetes_provider.py, which asserts the same
classes end to end)."""

from __future__ import annotations

import json

import pytest
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import sdk
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.check import (
    reason_for,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.classify import (
    classify,
    status_of,
)


def api_error(code: int, reason: str, message: str = "", with_body: bool = True) -> ApiException:
    exc = ApiException(status=code, reason=reason)
    if with_body:
        exc.body = json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": reason,
                "code": code,
            }
        )
    return exc


def _with_body(code: int, body: str) -> ApiException:
    exc = ApiException(status=code, reason="Not Found")
    exc.body = body
    return exc


QUOTA = (
    'pods "proxy-abc" is forbidden: exceeded quota: pods-1, requested: pods=1, used: pods=1, limited: pods=1'
)
RBAC = (
    'pods is forbidden: User "system:serviceaccount:ns:sa" cannot create resource "pods" in API group "" '
    'in the namespace "ns"'
)
NO_SA = (
    'pods "proxy-abc" is forbidden: error looking up service account ns/default: '
    'serviceaccount "default" not found'
)
TERMINATING = (
    'pods "proxy-abc" is forbidden: unable to create new content in namespace ns '
    "because it is being terminated"
)
LIMIT_RANGE = 'pods "proxy-abc" is forbidden: maximum memory usage per Container is 128Mi, but limit is 256Mi'
MISSING_LIMITS = 'pods "proxy-abc" is forbidden: failed quota: q: must specify limits.cpu for: squid'

CASES = [
    ("404 NotFound", api_error(404, "NotFound", 'pods "x" not found'), errors.NOT_FOUND),
    ("403 ResourceQuota exceeded", api_error(403, "Forbidden", QUOTA), errors.QUOTA_EXCEEDED),
    ("403 RBAC", api_error(403, "Forbidden", RBAC), errors.PERMANENT),
    ("403 LimitRange", api_error(403, "Forbidden", LIMIT_RANGE), errors.PERMANENT),
    ("403 quota needs limits", api_error(403, "Forbidden", MISSING_LIMITS), errors.PERMANENT),
    ("403 no default ServiceAccount yet", api_error(403, "Forbidden", NO_SA), errors.TRANSIENT),
    ("403 namespace terminating", api_error(403, "Forbidden", TERMINATING), errors.TRANSIENT),
    (
        "403 quota not counted yet",
        api_error(403, "Forbidden", 'pods "p" is forbidden: status unknown for quota: q, resource: pods'),
        errors.TRANSIENT,
    ),
    ("403 without a body", api_error(403, "Forbidden", with_body=False), errors.PERMANENT),
    ("401 Unauthorized", api_error(401, "Unauthorized", "Unauthorized"), errors.PERMANENT),
    ("400 BadRequest", api_error(400, "BadRequest", "bad"), errors.PERMANENT),
    ("422 Invalid", api_error(422, "Invalid", 'Pod "x" is invalid'), errors.PERMANENT),
    ("409 Conflict", api_error(409, "Conflict", "the object has been modified"), errors.TRANSIENT),
    ("409 AlreadyExists", api_error(409, "AlreadyExists", "exists"), errors.TRANSIENT),
    ("410 Expired continue", api_error(410, "Expired", "continue token expired"), errors.TRANSIENT),
    ("429 TooManyRequests", api_error(429, "TooManyRequests", "slow down"), errors.TRANSIENT),
    ("500 InternalError", api_error(500, "InternalError", "etcd"), errors.TRANSIENT),
    ("503 ServiceUnavailable", api_error(503, "ServiceUnavailable", ""), errors.TRANSIENT),
    ("504 Timeout", api_error(504, "Timeout", ""), errors.TRANSIENT),
    ("status 0 (no HTTP answer)", ApiException(status=0, reason="connection refused"), errors.TRANSIENT),
    # A 404 that is not a Status from the API server (a wrong URL, an ingress) proves nothing.
    ("404 without a body", ApiException(status=404, reason="Not Found"), errors.TRANSIENT),
    ("404 with an HTML body", _with_body(404, "<html>404</html>"), errors.TRANSIENT),
    ("deadline passed", DeadlineExceeded("get ran past its deadline"), errors.TRANSIENT),
    ("SDK missing", sdk.SDKMissing("install kubernetes"), errors.PERMANENT),
    ("bad kubeconfig", ConfigException("Invalid kube-config file"), errors.PERMANENT),
    (
        "connection refused",
        urllib3.exceptions.MaxRetryError(
            None, "/api", urllib3.exceptions.NewConnectionError(None, "refused")
        ),
        errors.TRANSIENT,
    ),
    ("read timeout", urllib3.exceptions.ReadTimeoutError(None, "/api", "timed out"), errors.TRANSIENT),
    ("unknown exception", RuntimeError("surprise"), errors.TRANSIENT),
    ("already classified", errors.permanent("get", "k8s-a", "ns/x", "bad id"), errors.PERMANENT),
]


@pytest.mark.parametrize(("exc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_classify(exc, expected):
    assert classify(exc) == expected


def test_status_of_reads_the_status_body():
    assert status_of(api_error(403, "Forbidden", QUOTA)) == (403, "Forbidden", QUOTA)
    bare = ApiException(status=502, reason="Bad Gateway")
    bare.body = "<html>not json</html>"
    assert status_of(bare) == (502, "Bad Gateway", "")


REASONS = [
    ("deadline", DeadlineExceeded("x"), contract.REASON_TIMEOUT),
    (
        "read timeout",
        urllib3.exceptions.ReadTimeoutError(None, "/version", "timed out"),
        contract.REASON_TIMEOUT,
    ),
    (
        "connect timeout inside a retry",
        urllib3.exceptions.MaxRetryError(None, "/version", urllib3.exceptions.ConnectTimeoutError("t")),
        contract.REASON_TIMEOUT,
    ),
    (
        "connection refused",
        urllib3.exceptions.MaxRetryError(None, "/version", urllib3.exceptions.NewConnectionError(None, "x")),
        contract.REASON_UNREACHABLE,
    ),
    ("401", api_error(401, "Unauthorized"), contract.REASON_UNAUTHORIZED),
    ("403", api_error(403, "Forbidden", RBAC), contract.REASON_FORBIDDEN),
    ("500", api_error(500, "InternalError"), contract.REASON_API_ERROR),
    ("status 0", ApiException(status=0, reason="x"), contract.REASON_UNREACHABLE),
    ("kubeconfig", ConfigException("no context"), "ClientConfigInvalid"),
    ("library", sdk.SDKMissing("x"), "ClientLibraryMissing"),
    ("other", OSError("x"), contract.REASON_UNREACHABLE),
]


@pytest.mark.parametrize(("exc", "expected"), [c[1:] for c in REASONS], ids=[c[0] for c in REASONS])
def test_check_reason(exc, expected):
    assert reason_for(exc) == expected
