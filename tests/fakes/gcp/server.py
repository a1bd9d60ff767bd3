"""The HTTP front of the fake Compute Engine API: routes, JSON bodies, faults, a request log.

``FakeCompute`` serves ``/compute/v1/projects/<project>/...`` on 127.0.0.1 at a free port in a
background thread of the test process. The real google-cloud-compute client reaches it with
``ClientOptions(api_endpoint="http://127.0.0.1:<port>")`` and anonymous credentials, which is
what the provider does with ``apiEndpoint`` set and no credentials file.

Routes (the subset the provider uses, shapes as in the public REST reference):

    POST   zones/{z}/instances                 instances.insert -> Operation
    POST   zones/{z}/instances/{n}/start|resume instances.start / instances.resume -> Operation
    GET    zones/{z}/instances/{name}          instances.get
    DELETE zones/{z}/instances/{name}          instances.delete -> Operation
    GET    aggregated/instances                instances.aggregatedList (filter, maxResults,
                                               pageToken, returnPartialSuccess)
    GET    zones/{z}/operations[/{op}]         zoneOperations.list (filter, maxResults) / get
    DELETE zones/{z}/operations/{op}           zoneOperations.delete
    GET    global/firewalls/{name}, POST global/firewalls, PATCH global/firewalls/{name}
    GET    global/operations/{op}              globalOperations.get (the firewall rules' ops)
    GET    regions/{r}                         regions.get with quotas

``POST /token`` is the OAuth 2.0 token endpoint of a service-account key (token.py); a request
with an ``Authorization`` header is refused 401 unless it carries a token that endpoint issued
(anonymous requests, the provider's ``apiEndpoint`` without a key, carry none).

Every request is checked against Google's Compute v1 discovery document first (discovery.py):
an undocumented method or path is 404, a bad parameter, unknown query parameter or body field,
a name or label that breaks its pattern, ``maxResults`` over 500 is 400 with Google's standard
error body. Every answer is checked against the method's response schema; departures are kept
in ``response_problems``, which the tests' harnesses assert empty.

Faults: ``inject(status=..., reason=..., method=..., path=..., times=..., delay=..., raw=...,
headers=...)`` answers matching requests with an API error body, or with ``raw`` bytes (no body,
an HTML page, cut JSON), extra headers such as Retry-After, or only delays them (``status`` None),
for ``delay`` seconds or until the ``hold`` event is set (a race's window made certain);
``state.unreachable`` makes aggregatedList partial. ``requests`` is the log of every request.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fakes.gcp import discovery, token
from fakes.gcp.model import ApiError, ComputeState, Timing
from fakes.gcp.token import TokenEndpoint

HOLD_LIMIT = 300.0  # seconds a held request waits at most (a test that never releases it)

PREFIX = re.compile(r"^/compute/v1/projects/(?P<project>[^/]+)/(?P<rest>.*)$")

FAULT_MESSAGES = {
    429: ("Rate Limit Exceeded", "rateLimitExceeded", "usageLimits"),
    403: (
        "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute'",
        "quotaExceeded",
        "usageLimits",
    ),
    401: ("Request is missing required authentication credential.", "required", "global"),
    500: ("Internal error. Please try again or contact Google Support.", "backendError", "global"),
    503: ("The service is currently unavailable.", "backendError", "global"),
}


@dataclasses.dataclass
class Fault:
    status: int | None
    reason: str = ""
    message: str = ""
    method: str = ""
    path: str = ""  # regex searched in the path after /projects/<project>/
    times: int = 1  # -1: forever
    delay: float = 0.0
    hits: int = 0
    raw: bytes | None = None  # sent as the body instead of an API error (no body, HTML, cut JSON)
    headers: dict = dataclasses.field(default_factory=dict)  # extra answer headers (Retry-After)
    hold: threading.Event | None = None  # the request waits until it is set (at most HOLD_LIMIT)

    def matches(self, method: str, rest: str) -> bool:
        if self.times == 0:
            return False
        if self.method and self.method != method:
            return False
        return not self.path or re.search(self.path, rest) is not None


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str  # after /compute/v1/projects/<project>/
    query: dict
    body: dict | None
    at: float
    headers: dict = dataclasses.field(default_factory=dict)


class FakeCompute:
    def __init__(self, project: str = "fake-project", timing: Timing | None = None, **state_args):
        self.state = ComputeState(project, timing=timing, **state_args)
        self.project = project
        self._faults = []
        self._lock = threading.Lock()
        self.requests = []
        self.response_problems = []  # answers that do not fit the discovery document
        self.token = TokenEndpoint()
        self._server = None
        self._thread = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeCompute:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-compute", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.token.stopped.set()  # a hanging or trickling token answer ends
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return "http://%s:%d" % (host, port)

    @property
    def token_uri(self) -> str:
        return self.endpoint + token.PATH

    # -- faults and the log ----------------------------------------------------------------

    def inject(
        self,
        status=None,
        reason="",
        message="",
        method="",
        path="",
        times=1,
        delay=0.0,
        raw=None,
        headers=None,
        hold=None,
    ) -> Fault:
        """Answer matching requests with ``status`` and an API error body (or ``raw`` bytes as
        the body, as a proxy, a load balancer or a cut connection would), or only delay them
        (``delay`` seconds, or until the ``hold`` event is set)."""
        if status is not None and not reason:
            message, reason, _domain = FAULT_MESSAGES.get(
                status, ("injected failure", "backendError", "global")
            )
        fault = Fault(
            status,
            reason,
            message or "injected failure",
            method,
            path,
            times,
            delay,
            0,
            raw,
            headers or {},
            hold,
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _fault_for(self, method: str, rest: str):
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, rest):
                    fault.hits += 1
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
        return None

    def log(self, method: str = "", path: str = "") -> list:
        """Logged requests, optionally only those with ``method`` and a ``path`` regex match."""
        with self._lock:
            entries = list(self.requests)
        return [
            r for r in entries if (not method or r.method == method) and (not path or re.search(path, r.path))
        ]

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def _record(self, entry: Request) -> None:
        with self._lock:
            self.requests.append(entry)

    # -- routing ---------------------------------------------------------------------------

    def handle(self, method: str, rest: str, query: dict, body) -> tuple:
        """Check the request against the discovery document (discovery.py: Google's 400 where it
        does not fit), serve it, and keep how the answer departs from the document's response
        schema in ``response_problems`` (the tests assert there are none)."""
        documented, path_params = discovery.match(method, "projects/%s/%s" % (self.project, rest))
        if documented is None:
            raise ApiError(404, "Not Found: %s %s" % (method, rest), "notFound")
        discovery.check_request(documented, path_params, query, body)
        status, payload = self._route(method, rest, query, body)
        problems = discovery.response_problems(documented, payload)
        if problems:
            with self._lock:
                self.response_problems.extend(problems)
        return status, payload

    def _route(self, method: str, rest: str, query: dict, body) -> tuple:
        s = self.state
        one = {k: v[-1] for k, v in query.items()}
        parts = rest.split("/")
        if method == "GET" and rest == "aggregated/instances":
            return 200, s.aggregated_instances(
                one.get("filter", ""),
                int(one.get("maxResults", 0) or 0),
                one.get("pageToken", ""),
                one.get("returnPartialSuccess", "").lower() == "true",
            )
        if len(parts) >= 3 and parts[0] == "zones":
            zone = parts[1]
            if parts[2] == "instances":
                if len(parts) == 3 and method == "POST":
                    return 200, s.insert_instance(zone, body or {})
                if len(parts) == 4 and method == "GET":
                    return 200, s.get_instance(zone, parts[3])
                if len(parts) == 4 and method == "DELETE":
                    return 200, s.delete_instance(zone, parts[3])
                if len(parts) == 5 and method == "POST" and parts[4] in ("start", "resume"):
                    return 200, s.start_instance(zone, parts[3], parts[4])
            if parts[2] == "operations":
                if len(parts) == 3 and method == "GET":
                    return 200, s.list_operations(
                        zone,
                        one.get("filter", ""),
                        int(one.get("maxResults", 0) or 0),
                        one.get("pageToken", ""),
                    )
                if len(parts) == 4 and method == "GET":
                    return 200, s.get_operation(zone, parts[3])
                if len(parts) == 4 and method == "DELETE":
                    s.delete_operation(zone, parts[3])
                    return 200, {}
        if parts[:2] == ["global", "firewalls"]:
            if len(parts) == 2 and method == "POST":
                return 200, s.insert_firewall(body or {})
            if len(parts) == 3 and method == "GET":
                return 200, s.get_firewall(parts[2])
            if len(parts) == 3 and method == "PATCH":
                return 200, s.patch_firewall(parts[2], body or {})
        if len(parts) == 3 and parts[:2] == ["global", "operations"] and method == "GET":
            return 200, s.get_global_operation(parts[2])
        if len(parts) == 2 and parts[0] == "regions" and method == "GET":
            return 200, s.get_region(parts[1])
        raise ApiError(404, "Not Found: %s %s" % (method, rest), "notFound")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeCompute = None
    protocol_version = "HTTP/1.1"  # keep-alive, like the real endpoint

    def _serve(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if url.path == token.PATH and self.command == "POST":
            self.fake.token.serve(self, raw)
            return
        match = PREFIX.match(url.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                self._send(400, ApiError(400, "Invalid JSON payload received.", "parseError").body())
                return
        rest = match.group("rest") if match else url.path
        self.fake._record(Request(self.command, rest, query, body, time.time(), dict(self.headers.items())))
        if not match or match.group("project") != self.fake.project:
            project = match.group("project") if match else "?"
            self._send(
                404, ApiError(404, "The resource 'projects/%s' was not found" % project, "notFound").body()
            )
            return
        authorization = self.headers.get("Authorization", "")
        if authorization and not self.fake.token.accepts(authorization):
            self._send(
                401,
                ApiError(
                    401, "Request had invalid authentication credentials.", "authError", "global"
                ).body(),
            )
            return
        fault = self.fake._fault_for(self.command, rest)
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.hold is not None:
                fault.hold.wait(HOLD_LIMIT)
            if fault.status is not None and fault.raw is not None:
                self._send_raw(fault.status, fault.raw, fault.headers)
                return
            if fault.status is not None:
                error = ApiError(
                    fault.status,
                    fault.message,
                    fault.reason,
                    FAULT_MESSAGES.get(fault.status, ("", "", "global"))[2],
                )
                self._send(fault.status, error.body(), fault.headers)
                return
        try:
            status, payload = self.fake.handle(self.command, rest, query, body)
        except ApiError as exc:
            status, payload = exc.code, exc.body()
        except Exception as exc:  # a fake's bug still gets an HTTP answer, as Google's 500 would
            status = 500
            payload = ApiError(
                500, "fake internal error: %s: %s" % (type(exc).__name__, exc), "backendError"
            ).body()
            with self.fake._lock:
                self.fake.response_problems.append("handler crashed: %r" % (exc,))
        self._send(status, payload)

    def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode("utf-8"), headers or {})

    def _send_raw(self, status: int, data: bytes, headers: dict) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to answer

    do_GET = do_POST = do_DELETE = do_PATCH = _serve  # noqa: N815 - http.server names

    def log_message(self, *args) -> None:  # the request log replaces stderr chatter
        pass
