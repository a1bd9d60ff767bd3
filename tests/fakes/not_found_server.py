"""A real HTTP server on 127.0.0.1 that answers 404 to every request, with a chosen body.

It stands for a wrong server URL or an ingress/proxy in front of the real API: the answer is a
404, but nothing in it proves that the instance asked for does not exist. The bodies the
conformance suite feeds (``BODIES``): none, an HTML page, a Kubernetes ``Status`` of reason
NotFound for another kind of object, and a Compute Engine error for another resource.
"""

from __future__ import annotations

import http.server
import json
import threading

BODIES = {
    "no body": (b"", ""),
    "html page": (b"<html><body><h1>404 Not Found</h1></body></html>", "text/html"),
    "status for another kind": (
        json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": 'namespaces "elsewhere" not found',
                "reason": "NotFound",
                "details": {"name": "elsewhere", "kind": "namespaces"},
                "code": 404,
            }
        ).encode(),
        "application/json",
    ),
    "api error for another resource": (
        json.dumps(
            {
                "error": {
                    "code": 404,
                    "message": "The resource 'projects/someone-else' was not found",
                    "errors": [
                        {
                            "message": "The resource 'projects/someone-else' was not found",
                            "reason": "notFound",
                        }
                    ],
                }
            }
        ).encode(),
        "application/json",
    ),
}


def write_kubeconfig(path: str, server: str) -> None:
    """A token kubeconfig for ``server`` (plain HTTP, so no CA is needed)."""
    text = (
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: '%s'}}]\n"
        "users: [{name: u, user: {token: not-a-secret}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n" % server
    )
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


class NotFoundServer:
    """``status``: 404 unless told; a 200 stands for a proxy that answers in the API's place.
    ``by_method`` (``{"POST": (409, body)}``) answers those methods otherwise, same content type."""

    def __init__(self, body: bytes = b"", content_type: str = "", status: int = 404, by_method=None):
        self.requests = []
        server = self
        answers = dict(by_method or {})
        default_body = body

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                server.requests.append((self.command, self.path))
                code, body = answers.get(self.command, (status, default_body))
                self.send_response(code)
                if content_type:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._answer()

            def do_POST(self):
                self._answer()

            def do_PATCH(self):
                self._answer()

            def do_DELETE(self):
                self._answer()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.endpoint = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="not-found-server", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
