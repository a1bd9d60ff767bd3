"""kube/errors.describe: an API error as one line (status, reason, the API server's message),
never the client's dump of every response header and the body."""

from __future__ import annotations

import json
import logging

from egress_proxies_controller.kube import errors
from kubernetes.client.exceptions import ApiException


class _Response:
    """What the client's ApiException reads from an HTTP response (``headers``, or
    ``getheaders()`` in older clients)."""

    headers = {"Audit-Id": "4f1c", "Content-Type": "application/json", "X-Kubernetes-Pf-Flowschema-Uid": "9"}

    def __init__(self, status: int, reason: str, body: str):
        self.status, self.reason, self.data = status, reason, body.encode()

    def getheaders(self) -> dict:
        return self.headers


def test_an_api_error_is_its_status_and_the_servers_message_on_one_line():
    body = json.dumps(
        {
            "kind": "Status",
            "status": "Failure",
            "message": 'leases.coordination.k8s.io "x" is forbidden: User "system:serviceaccount:a:b"\n'
            'cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "n"',
            "reason": "Forbidden",
            "code": 403,
        }
    )
    exc = ApiException(http_resp=_Response(403, "Forbidden", body))
    assert "Audit-Id" in str(exc) and "\n" in str(exc)  # what the client prints: the dump
    said = errors.describe(exc)
    assert said == (
        'HTTP 403 Forbidden: leases.coordination.k8s.io "x" is forbidden: User "system:serviceaccount:a:b" '
        'cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "n"'
    )


def test_a_body_that_is_not_a_status_is_cut_short_and_anything_else_is_one_line():
    exc = ApiException(http_resp=_Response(502, "Bad Gateway", "<html>\n" + "x" * 1000 + "</html>"))
    said = errors.describe(exc)
    assert said.startswith("HTTP 502 Bad Gateway: <html> xxx") and said.endswith("...")
    assert len(said) < errors.MESSAGE_MAX + 40 and "\n" not in said
    assert errors.describe(ApiException(status=0, reason="Connection refused")) == "HTTP 0 Connection refused"
    assert errors.describe(OSError("a\nb")) == "a b"
    assert errors.describe(TimeoutError()) == "TimeoutError"


def test_a_failure_is_one_line_for_an_api_error_and_a_traceback_for_anything_else(caplog):
    log = logging.getLogger("egress_proxies_controller.test")
    body = json.dumps({"kind": "Status", "message": 'proxies "a" is forbidden', "code": 403})
    with caplog.at_level(logging.INFO, logger="egress_proxies_controller"):
        errors.log_failure(
            log, "reconcile of ns/a failed", ApiException(http_resp=_Response(403, "Forbidden", body))
        )
        try:
            raise KeyError("status")
        except KeyError as exc:
            errors.log_failure(log, "reconcile of ns/b failed", exc)
    api, bug = caplog.records
    assert api.getMessage() == 'reconcile of ns/a failed: HTTP 403 Forbidden: proxies "a" is forbidden'
    assert api.exc_info is None and api.levelname == "ERROR"
    assert bug.getMessage() == "reconcile of ns/b failed" and bug.exc_info[0] is KeyError


def test_a_refusal_of_our_credentials_is_no_error_line_of_the_loop_that_met_it(caplog):
    """kube/credentials.py says the first 401 once, for every loop; a loop's failure log of it is a
    debug line, so 10,000 Proxies failing on an expired token do not log 10,000 errors."""
    log = logging.getLogger("egress_proxies_controller.test")
    body = json.dumps({"kind": "Status", "message": "Unauthorized", "code": 401})
    with caplog.at_level(logging.DEBUG, logger="egress_proxies_controller"):
        for name in ("a", "b", "c"):
            errors.log_failure(
                log,
                "reconcile of ns/%s failed" % name,
                ApiException(http_resp=_Response(401, "Unauthorized", body)),
            )
    assert [r.levelname for r in caplog.records] == ["DEBUG"] * 3
    first = caplog.records[0].getMessage()
    assert first == "reconcile of ns/a failed: the API server refused our credentials"
