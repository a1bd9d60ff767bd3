"""The gcp provider's OAuth token refresh, through the real google-auth and google-cloud-compute
clients, against the fake's token endpoint (tests/fakes/gcp/token.py).

Credentials that refresh over HTTP (what Application Default Credentials give: a user's refresh
token, the metadata server) refresh on first use, inside the provider's bounded call. google-auth
pins their endpoints to Google's (an authorized-user file's ``token_uri`` is overridden), so the
test builds the same class with the fake's ``token_uri`` and hands it to ``ComputeAPI``. A refresh
that hangs or trickles is bounded by the call's deadline and answers Transient naming the
refresh; a refused refresh (400 ``invalid_grant``, 401 ``invalid_client``) is Permanent; a token
server error Transient. A service-account key (``credentialsFile``) never refreshes over the
network: the client self-signs its bearer JWT, so the token endpoint is never asked."""

from __future__ import annotations

import json
import os

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.oauth2 import credentials as user_credentials

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ProviderError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import api
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.provider import GcpProvider
from contract.gcp_backend import PROJECT, gcp_backend

CLIENT_ID = "764086051850-fake.apps.googleusercontent.com"
CLIENT_SECRET = "fake-client-secret"
REFRESH_TOKEN = "1//fake-refresh-token"
EMAIL = "egress-proxies@%s.iam.gserviceaccount.com" % PROJECT


backend = gcp_backend  # the fixture, by the name the suite asks for


def write_json(path, data: dict) -> str:
    path.write_text(json.dumps(data))
    os.chmod(path, 0o600)
    return str(path)


@pytest.fixture
def user(backend):
    """A provider whose credentials are an authorized user the fake's token endpoint knows."""
    backend.fake.token.add_user(CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN)
    credentials = user_credentials.Credentials(
        token=None,
        refresh_token=REFRESH_TOKEN,
        token_uri=backend.fake.token_uri,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        scopes=list(api.SCOPES),
    )
    block = (
        config.parse(
            {
                "providers": [
                    {
                        "name": "g",
                        "type": "gcp",
                        "gcp": {"project": PROJECT, "apiEndpoint": backend.fake.endpoint},
                    }
                ]
            }
        )
        .providers[0]
        .block
    )
    provider = GcpProvider(
        "g",
        backend.installation,
        block,
        api=api.ComputeAPI(PROJECT, api_endpoint=backend.fake.endpoint, credentials=credentials),
    )
    yield provider
    provider.close()


def failure(call) -> ProviderError:
    with pytest.raises(ProviderError) as exc_info:
        call()
    return exc_info.value


def authorizations(backend) -> list:
    """The Authorization header of every list request (google-auth writes it in lower case)."""
    return [
        next((v for k, v in r.headers.items() if k.lower() == "authorization"), "")
        for r in backend.fake.log("GET", "aggregated/instances")
    ]


def test_a_refreshed_token_is_sent_to_the_api(backend, user):
    provider = user
    assert provider.list_by_tag(Deadline(15)) == []
    assert provider.list_by_tag(Deadline(15)) == []
    assert backend.fake.token.refreshes == 1  # one refresh, then the token is reused
    (first, second) = authorizations(backend)
    assert first == second and backend.fake.token.accepts(first)


def test_a_service_account_key_signs_its_own_token(backend, tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    backend.fake.token.add_service_account(EMAIL, public)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = write_json(
        tmp_path / "key.json",
        {
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": "0123456789abcdef",
            "private_key": private.decode("ascii"),
            "client_email": EMAIL,
            "client_id": "100000000000000000001",
            "token_uri": backend.fake.token_uri,
        },
    )
    provider = backend.build(credentialsFile=path)
    assert provider.list_by_tag(Deadline(15)) == []
    assert backend.fake.token.refreshes == 0
    (authorization,) = authorizations(backend)
    assert backend.fake.token.accepts(authorization)


@pytest.mark.parametrize("fault", ["hang", "trickle"])
def test_a_token_refresh_that_hangs_or_trickles_is_bounded_by_the_deadline(backend, user, fault):
    getattr(backend.fake.token, fault)()
    provider = user
    err = failure(lambda: provider.list_by_tag(Deadline(2.0)))
    assert errors.class_of(err) == errors.TRANSIENT
    assert "the OAuth token refresh at %s did not answer in time" % backend.fake.token_uri in str(err)
    assert backend.fake.token.refreshes == 1
    assert authorizations(backend) == []  # never reached the API


@pytest.mark.parametrize(
    ("status", "error", "description"),
    [
        (401, "invalid_client", "The OAuth client was not found."),
        (400, "invalid_grant", "Token has been expired or revoked."),
    ],
)
def test_a_refused_refresh_is_permanent(backend, user, status, error, description):
    backend.fake.token.refuse(status, error, description)
    provider = user
    err = failure(lambda: provider.list_by_tag(Deadline(15)))
    assert errors.class_of(err) == errors.PERMANENT
    assert error in str(err) and description in str(err)
    assert REFRESH_TOKEN not in str(err) and CLIENT_SECRET not in str(err)


def test_a_revoked_refresh_token_is_refused_by_the_endpoint_and_permanent(backend, user):
    backend.fake.token.refresh_tokens.clear()  # revoked: the endpoint's own answer, no fault
    provider = user
    err = failure(lambda: provider.list_by_tag(Deadline(15)))
    assert errors.class_of(err) == errors.PERMANENT
    assert "invalid_grant" in str(err)


def test_a_token_server_error_is_transient(backend, user):
    backend.fake.token.refuse(503, "temporarily_unavailable", "The service is currently unavailable.")
    provider = user
    err = failure(lambda: provider.list_by_tag(Deadline(15)))
    assert errors.class_of(err) == errors.TRANSIENT
    assert "temporarily_unavailable" in str(err)
