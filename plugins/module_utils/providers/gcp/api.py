# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The seam between the gcp provider and google-cloud-compute: ``ComputeAPI``.

The provider calls only these methods, which take and return plain dicts in the Compute Engine
REST shape, so unit tests substitute a small fake and nothing else in the provider touches SDK
types. This adapter builds the real clients (REST transport) lazily at the first call, so
constructing a provider never contacts the API nor reads credentials. Every call passes an
explicit ``timeout`` (derived from the caller's Deadline) and ``retry=None``: the SDK's own
retries (up to 600 s on get and list) would outlive any deadline; callers retry by class.

Credentials: ``credentials_file`` (a service-account key) when set; otherwise, with an
``api_endpoint`` (tests, private endpoints without auth) anonymous credentials; otherwise
Application Default Credentials.
"""

from __future__ import annotations

import json
import threading
import traceback

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
    require_readable,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.classify import (
    CredentialsProblem,
    SdkMissing,
)

try:
    import requests.adapters
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import compute_v1
    from google.oauth2 import service_account  # compute_v1 imports it too: no extra cost

    SDK_IMPORT_ERROR = None

    class _PartialSuccessAdapter(requests.adapters.HTTPAdapter):
        """Adds ``returnPartialSuccess=true`` to aggregatedList requests (see below)."""

        def send(self, request, *args, **kwargs):
            if "/aggregated/instances" in request.url and "returnPartialSuccess=" not in request.url:
                request.prepare_url(request.url, {"returnPartialSuccess": "true"})
            return super().send(request, *args, **kwargs)

except ImportError:  # the collection imports without the SDK; using the provider then fails clearly
    SDK_IMPORT_ERROR = traceback.format_exc()

SCOPES = ("https://www.googleapis.com/auth/compute",)

# Each ComputeAPI method is one REST request (``retry=None``; a list reads its first page only):
# its REST method, and the span attribute each positional argument is, or None for one a span
# must not carry (a request body holds cloud-init and labels; a filter or page token is noise).
RPCS = {
    "insert_instance": ("instances.insert", ("gcp.zone", None)),
    "get_instance": ("instances.get", ("gcp.zone", "gcp.instance")),
    "delete_instance": ("instances.delete", ("gcp.zone", "gcp.instance")),
    "start_instance": ("instances.start", ("gcp.zone", "gcp.instance", "gcp.verb")),
    "list_instances_page": ("instances.aggregatedList", (None, None, None)),
    "list_zone_operations": ("zoneOperations.list", ("gcp.zone", None, None)),
    "delete_zone_operation": ("zoneOperations.delete", ("gcp.zone", "gcp.operation")),
    "get_firewall": ("firewalls.get", ("gcp.firewall",)),
    "insert_firewall": ("firewalls.insert", (None,)),
    "patch_firewall": ("firewalls.patch", ("gcp.firewall", None)),
    "get_global_operation": ("globalOperations.get", ("gcp.operation",)),
    "get_region": ("regions.get", ("gcp.region",)),
}


def rpc_attributes(method_name: str, args: tuple) -> tuple:
    """``(rpc, attributes)`` for a span around ``ComputeAPI.<method_name>(*args)``: identifiers
    only, by the table above (an unknown method, such as a test double's, names itself)."""
    rpc, names = RPCS.get(method_name, (method_name, ()))
    attributes = {"gcp.rpc": rpc}
    for name, value in zip(names, args, strict=False):
        if name is not None and isinstance(value, str):
            attributes[name] = value
    return rpc, attributes


def _as_dict(message) -> dict:
    # Enum names, not numbers: Operation.status must read "DONE" like the REST reference.
    return type(message).to_dict(message, preserving_proto_field_name=False, use_integers_for_enums=False)


class ComputeAPI:
    """Compute Engine calls for one project; safe to share between the threads of a batch."""

    def __init__(self, project: str, credentials_file: str = "", api_endpoint: str = "", credentials=None):
        self.project = project
        self.credentials_file = credentials_file
        self.api_endpoint = api_endpoint
        self._clients = {}
        self._credentials = credentials  # given: google-auth credentials built by the caller
        self._lock = threading.Lock()  # batch threads share one adapter: build each client once

    # -- client construction ---------------------------------------------------------------

    def _creds(self):
        if self._credentials is not None:
            return self._credentials
        if self.credentials_file:
            require_readable(self.credentials_file, "credentialsFile")  # missing: Transient
            try:
                self._credentials = service_account.Credentials.from_service_account_file(
                    self.credentials_file, scopes=list(SCOPES)
                )
            except (OSError, ValueError, AttributeError, TypeError) as exc:
                # The message names the file, never its content. google-auth reads any JSON
                # document: an array or a string fails as AttributeError, not ValueError.
                raise CredentialsProblem(
                    "credentialsFile %s is not a readable service-account key: %s"
                    % (self.credentials_file, type(exc).__name__)
                ) from None
        elif self.api_endpoint:
            self._credentials = AnonymousCredentials()
        return self._credentials  # None: the client resolves Application Default Credentials

    def pending_token_uri(self) -> str:
        """The token endpoint while credentials that refresh over HTTP have no valid token (the
        refresh has not finished, or failed), else ``""``: says why an abandoned call was stuck.
        A service-account key self-signs its JWTs (google-cloud-compute's
        ``always_use_jwt_access``), so it never waits for a token endpoint."""
        for client in list(self._clients.values()):  # no lock: a stuck call may hold it
            # The transports hold their own copies (a service-account key's with JWT access).
            creds = getattr(getattr(client, "transport", None), "_credentials", None)
            if (
                creds is None
                or getattr(creds, "valid", True)
                or getattr(creds, "_always_use_jwt_access", False)
            ):
                continue
            return getattr(creds, "_token_uri", "") or "the token endpoint"
        return ""

    def _client(self, kind: str):
        if SDK_IMPORT_ERROR is not None:
            raise SdkMissing(
                "the gcp provider needs the google-cloud-compute library on the host that runs "
                "the modules (pip install google-cloud-compute)"
            )
        with self._lock:
            client = self._clients.get(kind)
            if client is None:
                client = self._clients[kind] = self._new_client(kind)
            return client

    def _new_client(self, kind: str):
        factory = {
            "instances": compute_v1.InstancesClient,
            "list": compute_v1.InstancesClient,
            "operations": compute_v1.ZoneOperationsClient,
            "firewalls": compute_v1.FirewallsClient,
            "regions": compute_v1.RegionsClient,
            "global_operations": compute_v1.GlobalOperationsClient,
        }[kind]
        options = ClientOptions(api_endpoint=self.api_endpoint) if self.api_endpoint else None
        client = factory(credentials=self._creds(), client_options=options, transport="rest")
        _refuse_redirects(client)
        if kind == "list":
            _enable_partial_success(client)
        return client

    def close(self) -> None:
        """Close every client's HTTP session (called at the end of a module run)."""
        with self._lock:
            clients, self._clients = self._clients, {}
        for client in clients.values():
            try:
                client.transport.close()
            except Exception:  # closing is best effort and must not mask the run's result
                pass

    # -- instances -------------------------------------------------------------------------

    def insert_instance(self, zone: str, body: dict, timeout: float) -> dict:
        resource = compute_v1.Instance.from_json(json.dumps(body))  # strict: unknown fields fail
        op = self._client("instances").insert_unary(
            project=self.project, zone=zone, instance_resource=resource, timeout=timeout, retry=None
        )
        return _as_dict(op)

    def get_instance(self, zone: str, name: str, timeout: float) -> dict:
        found = self._client("instances").get(
            project=self.project, zone=zone, instance=name, timeout=timeout, retry=None
        )
        return _as_dict(found)

    def delete_instance(self, zone: str, name: str, timeout: float) -> dict:
        op = self._client("instances").delete_unary(
            project=self.project, zone=zone, instance=name, timeout=timeout, retry=None
        )
        return _as_dict(op)

    def start_instance(self, zone: str, name: str, verb: str, timeout: float) -> dict:
        """``instances.start`` (``verb`` "start", a TERMINATED VM) or ``instances.resume``."""
        call = {"start": "start_unary", "resume": "resume_unary"}[verb]
        op = getattr(self._client("instances"), call)(
            project=self.project, zone=zone, instance=name, timeout=timeout, retry=None
        )
        return _as_dict(op)

    def list_instances_page(self, filter_: str, max_results: int, page_token: str, timeout: float) -> dict:
        """One page of ``instances.aggregatedList``: ``{"items": {scope: {...}}, "nextPageToken"...}``."""
        request = compute_v1.AggregatedListInstancesRequest(
            project=self.project, filter=filter_, max_results=max_results
        )
        if page_token:
            request.page_token = page_token
        pager = self._client("list").aggregated_list(request=request, timeout=timeout, retry=None)
        first = next(iter(pager.pages))  # the page already fetched: no second request
        return _as_dict(first)

    # -- operations, firewalls, regions ----------------------------------------------------

    def list_zone_operations(self, zone: str, filter_: str, max_results: int, timeout: float) -> list:
        request = compute_v1.ListZoneOperationsRequest(
            project=self.project, zone=zone, filter=filter_, max_results=max_results
        )
        pager = self._client("operations").list(request=request, timeout=timeout, retry=None)
        first = next(iter(pager.pages))
        return _as_dict(first).get("items") or []

    def delete_zone_operation(self, zone: str, name: str, timeout: float) -> None:
        self._client("operations").delete(
            project=self.project, zone=zone, operation=name, timeout=timeout, retry=None
        )

    def get_firewall(self, name: str, timeout: float) -> dict:
        rule = self._client("firewalls").get(project=self.project, firewall=name, timeout=timeout, retry=None)
        return _as_dict(rule)

    def insert_firewall(self, body: dict, timeout: float) -> dict:
        resource = compute_v1.Firewall.from_json(json.dumps(body))
        op = self._client("firewalls").insert_unary(
            project=self.project, firewall_resource=resource, timeout=timeout, retry=None
        )
        return _as_dict(op)

    def patch_firewall(self, name: str, body: dict, timeout: float) -> dict:
        resource = compute_v1.Firewall.from_json(json.dumps(body))
        op = self._client("firewalls").patch_unary(
            project=self.project, firewall=name, firewall_resource=resource, timeout=timeout, retry=None
        )
        return _as_dict(op)

    def get_global_operation(self, name: str, timeout: float) -> dict:
        """``globalOperations.get``: how a firewall rule's insert or patch ended."""
        op = self._client("global_operations").get(
            project=self.project, operation=name, timeout=timeout, retry=None
        )
        return _as_dict(op)

    def get_region(self, region: str, timeout: float) -> dict:
        found = self._client("regions").get(project=self.project, region=region, timeout=timeout, retry=None)
        return _as_dict(found)


def _refuse_redirects(client) -> None:
    """The Compute API never redirects its calls: a 3xx comes from something in between (a
    proxy, a captive portal), and whatever the redirect's target answers is not the API's answer
    about the object asked for (issue 28 §5: a 302 to a notFound body proved nothing). With
    ``max_redirects`` 0 requests raises ``TooManyRedirects`` instead of following: Transient."""
    session = getattr(client.transport, "_session", None)
    if session is not None:
        session.max_redirects = 0


def _enable_partial_success(client) -> None:
    """Ask aggregatedList for partial success (unreachable zones left out, not a failed list).

    google-cloud-compute 1.57 has no ``return_partial_success`` field on the request message,
    though the REST API takes the ``returnPartialSuccess`` query parameter. This client object
    only ever makes aggregatedList calls; an adapter on its HTTP session adds the parameter on
    the wire (the fake API's tests check that it arrives).
    """
    session = getattr(client.transport, "_session", None)
    if session is not None:
        adapter = _PartialSuccessAdapter()
        session.mount("https://", adapter)
        session.mount("http://", adapter)
