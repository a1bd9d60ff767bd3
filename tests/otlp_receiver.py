"""A local OTLP/HTTP trace receiver for the tracing tests: what a collector sees.

Listens on loopback (a free port), accepts ``POST /v1/traces`` with a protobuf
``ExportTraceServiceRequest`` (gzip or not, as the exporter sends it), decodes it with
opentelemetry-proto and keeps every span and the raw bodies (to search for secrets). It answers
as a collector does: 200 with an ``ExportTraceServiceResponse``, 404 elsewhere.
"""

from __future__ import annotations

import dataclasses
import gzip
import http.server
import threading
import time

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


@dataclasses.dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root
    service: str
    attributes: dict
    status: str  # "" (unset), "ok" or "error: <description>"


def _value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def _status(status) -> str:
    code = {0: "", 1: "ok", 2: "error"}[status.code]
    return "%s: %s" % (code, status.message) if code == "error" else code


class Receiver:
    def __init__(self):
        self.spans: list[Span] = []
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                receiver._take(body)
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = "http://127.0.0.1:%d" % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _take(self, body: bytes) -> None:
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        spans = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        Span(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            service=resource.get("service.name", ""),
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            status=_status(span.status),
                        )
                    )
        with self._lock:
            self.bodies.append(body)
            self.spans.extend(spans)

    def named(self, name: str) -> list:
        with self._lock:
            return [s for s in self.spans if s.name == name]

    def wait_for(self, predicate, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(list(self.spans)):
                    return
            time.sleep(0.2)
        raise AssertionError("%s: not received in %ds; spans: %s" % (what, timeout, self.spans))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        return False
