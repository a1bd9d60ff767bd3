"""The gcp provider's trace: the real google-cloud-compute client (REST) against the fake
Compute Engine API (tests/fakes/gcp), with OAuth credentials refreshed at the fake's token
endpoint, exported over OTLP/HTTP and decoded as a collector would (trace_capture.py). Each
``provider.<op>`` holds one ``gcp.<rest method>`` span per REST request, with the zone, the
instance and the HTTP status. The cloud-init, the refresh token, the client secret and the
access token the API was sent appear in no exported byte."""

from __future__ import annotations

import uuid

import pytest
from docs.trace_tree import assert_trace_as_drawn
from google.oauth2 import credentials as user_credentials
from trace_capture import assert_no_secret, check_tree, children, exporting, render

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import api
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.provider import GcpProvider
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe
from contract.gcp_backend import PROJECT, ZONE, gcp_backend
from contract.suite import dl

backend = gcp_backend
CLIENT_ID = "764086051850-trace.apps.googleusercontent.com"


@pytest.fixture
def secrets():
    return {"refresh": "1//refresh-%s" % uuid.uuid4().hex, "client": "secret-%s" % uuid.uuid4().hex}


@pytest.fixture
def provider(backend, secrets):
    """The provider as registry.build makes it (observed), over OAuth user credentials."""
    backend.fake.token.add_user(CLIENT_ID, secrets["client"], secrets["refresh"])
    credentials = user_credentials.Credentials(
        token=None,
        refresh_token=secrets["refresh"],
        token_uri=backend.fake.token_uri,
        client_id=CLIENT_ID,
        client_secret=secrets["client"],
        scopes=list(api.SCOPES),
    )
    parsed = providers_file.parse(
        {
            "installation": backend.installation,
            "providers": [
                {
                    "name": "g",
                    "type": "gcp",
                    "gcp": {"project": PROJECT, "apiEndpoint": backend.fake.endpoint},
                }
            ],
        }
    )
    inner = GcpProvider(
        "g",
        parsed.installation,
        parsed.providers[0].block,
        api=api.ComputeAPI(PROJECT, api_endpoint=backend.fake.endpoint, credentials=credentials),
    )
    yield observe.observed(inner, observe.Telemetry())
    inner.close()


def test_create_get_delete_hold_one_span_per_rest_request(backend, provider, secrets):
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    req = backend.request(str(uuid.uuid4()), cloud_init="#cloud-config\n# %s\n" % sentinel)
    with exporting() as (receiver, _root):
        provider_id = provider.create(req, dl(backend))
        provider.get(provider_id, dl(backend))
        provider.delete(provider_id, dl(backend))
        missing = "zones/%s/instances/proxy-%s" % (ZONE, uuid.uuid4().hex[:16])
        with pytest.raises(errors.ProviderError):
            provider.get(missing, dl(backend))  # a 404: its status on the request's span
    spans = list(receiver.spans)
    print(render(spans))
    by_id = check_tree(spans)
    assert_trace_as_drawn(
        "docs/gcp-provider.md", "gcp.instances.insert", spans
    )  # the page's tree is this trace
    name = provider_id.rsplit("/", 1)[-1]
    calls = []
    for op in [s for s in spans if s.name.startswith("provider.")]:
        assert by_id[op.parent_id].name == "module.proxy_instance"
        assert children(spans, op), "%s made no REST request span" % op.name
        calls += [(op.name, c) for c in children(spans, op)]
    for _op, call in calls:
        assert call.name == "gcp.%s" % call.attributes["gcp.rpc"]
        assert call.attributes["gcp.project"] == PROJECT
        assert call.attributes["duration_ms"] > 0
    seen = {(op, c.name, c.attributes.get("gcp.instance")) for op, c in calls}
    assert ("provider.create", "gcp.instances.insert", None) in seen
    assert ("provider.get", "gcp.instances.get", name) in seen
    assert ("provider.delete", "gcp.instances.delete", name) in seen
    insert = next(c for _op, c in calls if c.name == "gcp.instances.insert")
    assert insert.attributes["gcp.zone"] == ZONE and insert.attributes["http.response.status_code"] == 200
    not_found = [c for _op, c in calls if c.attributes.get("gcp.instance") == missing.rsplit("/", 1)[-1]]
    assert not_found and not_found[0].attributes["http.response.status_code"] == 404
    assert not_found[0].status.startswith("error")
    sent = [
        v.split(" ", 1)[-1]
        for r in backend.fake.log("POST", "instances")
        for k, v in r.headers.items()
        if k.lower() == "authorization"
    ]
    assert sent, "the API was sent no token"
    assert_no_secret(receiver, sentinel, "cloud-config", secrets["refresh"], secrets["client"], *sent)
