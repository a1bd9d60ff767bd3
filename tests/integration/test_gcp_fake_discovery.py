"""The fake Compute API against Google's v1 discovery document (issue 28 §6).

The fake must refuse what the real API refuses, with Google's standard 400 error body, so the
provider's tests cannot pass on requests Compute Engine would reject: names and label keys or
values that break their patterns, unknown body fields and query parameters, ``maxResults`` over
500, a bad page token (which used to crash the handler with no answer at all). It must honour
``deletionProtection``, let operations pass PENDING, RUNNING, DONE, and give only answers that
fit the document's response schemas. Requests the real client cannot send (unknown fields and
parameters) go over plain HTTP on loopback.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
import uuid

import pytest
from contract.gcp_backend import IMAGE, PROJECT, ZONE, gcp_backend
from fakes.gcp import discovery
from google.api_core import exceptions as api_exceptions
from google.cloud import compute_v1

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline

backend = gcp_backend  # the harness fixture (its own fake API server), by its name


def raw(fake, method: str, path: str, body=None) -> tuple:
    """``(status, JSON body)`` of one plain HTTP request to ``/compute/v1/projects/<p>/<path>``."""
    host, port = urllib.parse.urlsplit(fake.endpoint).netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, "/compute/v1/projects/%s/%s" % (PROJECT, path), body=data)
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        conn.close()


def google_400(status: int, body) -> str:
    """The message of Google's standard 400 error body (fails on any other shape)."""
    assert status == 400, body
    error = body["error"]
    assert error["code"] == 400 and error["status"] == "INVALID_ARGUMENT"
    assert error["errors"][0]["reason"] == "invalid" and error["errors"][0]["message"] == error["message"]
    return error["message"]


def instance_body(name: str, **extra) -> dict:
    body = {
        "name": name,
        "machineType": "zones/%s/machineTypes/e2-small" % ZONE,
        "disks": [{"boot": True, "autoDelete": True, "initializeParams": {"sourceImage": IMAGE}}],
        "networkInterfaces": [{"network": "global/networks/default"}],
    }
    body.update(extra)
    return body


def insert_path() -> str:
    return "zones/%s/instances" % ZONE


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (instance_body("Bad_Name"), "resource.name"),
        (instance_body("proxy-a", labels={"Team": "a"}), "label key 'Team'"),
        (instance_body("proxy-a", labels={"team": "v" * 64}), "label value"),
        (instance_body("proxy-a", bogusField=1), 'Unknown name "bogusField"'),
        (instance_body("proxy-a", deletionProtection="yes"), "deletionProtection"),
        (
            instance_body("proxy-a", disks=[{"boot": True, "initializeParams": {"diskSizeGb": "x"}}]),
            "diskSizeGb",
        ),
    ],
    ids=["bad-name", "capital-label-key", "long-label-value", "unknown-field", "wrong-type", "bad-int64"],
)
def test_insert_bodies_google_refuses_get_its_400(backend, body, text):
    message = google_400(*raw(backend.fake, "POST", insert_path(), body))
    assert text in message
    assert backend.fake.state.instances == {}


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("maxResults=501", "maxResults"),
        ("bogusParam=1", 'Unknown name "bogusParam"'),
        ("pageToken=not-a-token", "pageToken"),
        ("maxResults=ten", "maxResults"),
        ("returnPartialSuccess=maybe", "returnPartialSuccess"),
    ],
)
def test_list_query_parameters_google_refuses_get_its_400(backend, query, text):
    assert text in google_400(*raw(backend.fake, "GET", "aggregated/instances?" + query))


def test_a_bad_path_parameter_gets_the_400_of_its_pattern(backend):
    assert "instance" in google_400(*raw(backend.fake, "GET", "zones/%s/instances/Bad_Name" % ZONE))


def test_return_partial_success_is_allowed_explicitly(backend):
    status, body = raw(backend.fake, "GET", "aggregated/instances?returnPartialSuccess=true&maxResults=500")
    assert status == 200 and body["kind"] == "compute#instanceAggregatedList"


def test_the_real_client_gets_a_400_for_a_bad_page_token_and_too_large_pages(backend):
    client = compute_v1.InstancesClient(
        credentials=backend.provider.inner.api._creds(),
        client_options={"api_endpoint": backend.fake.endpoint},
        transport="rest",
    )
    for request in (
        compute_v1.AggregatedListInstancesRequest(project=PROJECT, page_token="garbage"),
        compute_v1.AggregatedListInstancesRequest(project=PROJECT, max_results=501),
    ):
        with pytest.raises(api_exceptions.BadRequest):
            next(iter(client.aggregated_list(request=request, retry=None, timeout=10).pages))
    client.transport.close()


def test_deletion_protection_is_honoured(backend):
    req = backend.request(str(uuid.uuid4()))
    provider_id = backend.provider.create(req, Deadline(10))
    backend.fake.state.protect(ZONE, req.name)
    with pytest.raises(errors.ProviderError) as exc_info:
        backend.provider.delete(provider_id, Deadline(10))
    assert errors.class_of(exc_info.value) == errors.PERMANENT
    assert "protected against deletion" in str(exc_info.value)
    assert backend.fake.state.leftovers(ZONE, req.name)


def test_operations_pass_pending_running_done(backend):
    backend.provider.create(backend.request(str(uuid.uuid4())), Deadline(10))
    ((_zone, name),) = backend.fake.state.operations
    seen = []
    end = time.monotonic() + 10
    while "DONE" not in seen and time.monotonic() < end:
        status, op = raw(backend.fake, "GET", "zones/%s/operations/%s" % (ZONE, name))
        assert status == 200
        if not seen or seen[-1] != op["status"]:
            seen.append(op["status"])
        time.sleep(0.02)
    assert seen == ["PENDING", "RUNNING", "DONE"]


def test_answers_that_do_not_fit_the_response_schema_are_caught(backend):
    req = backend.request(str(uuid.uuid4()))
    backend.provider.create(req, Deadline(10))
    backend.fake.state.instances[(ZONE, req.name)]["body"]["notAnInstanceField"] = 1
    backend.provider.get("zones/%s/instances/%s" % (ZONE, req.name), Deadline(10))
    problems, backend.fake.response_problems[:] = list(backend.fake.response_problems), []
    assert problems and "notAnInstanceField" in problems[0]


def test_the_document_is_the_installed_packages():
    doc = discovery.document()
    assert doc["name"] == "compute" and doc["version"] == "v1"
    assert (
        "returnPartialSuccess" not in doc["resources"]["instances"]["methods"]["aggregatedList"]["parameters"]
    )
