"""The fault matrix's Toxiproxy client: a removal past Toxiproxy's 25 s API timeout (503 "Timeout",
the removal going on in the server) is waited for, not reported as a failure (CI's
net-latency-jitter-kubernetes failed so), and any other refusal still raises."""

from __future__ import annotations

import http.server
import json
import threading

import pytest
from faults.toxiproxy import Proxy, Toxiproxy, ToxiproxyError

TIMEOUT_PAGE = b"<html><head><title>Timeout</title></head><body><h1>Timeout</h1></body></html>"


def _server(answers: list):
    """Answers each request with the next (status, body) of ``answers``; records the requests."""
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            seen.append((self.command, self.path))
            status, body = answers.pop(0)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_DELETE = _answer  # noqa: N815 - http.server's names

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


@pytest.fixture
def serve():
    servers = []

    def start(answers):
        server, seen = _server(answers)
        servers.append(server)
        api = Toxiproxy("http://127.0.0.1:%d" % server.server_address[1])
        return Proxy(api, "k8s", "127.0.0.1:1", "127.0.0.1:2"), seen

    yield start
    for server in servers:
        server.shutdown()


def test_a_removal_past_the_api_timeout_is_waited_for(serve):
    still = json.dumps([{"name": "latd"}]).encode()
    proxy, seen = serve([(503, TIMEOUT_PAGE), (503, TIMEOUT_PAGE), (200, still), (200, b"[]")])
    proxy.remove("latd")
    assert seen == [("DELETE", "/proxies/k8s/toxics/latd")] + [("GET", "/proxies/k8s/toxics")] * 3


def test_any_other_refusal_of_a_removal_raises(serve):
    proxy, seen = serve([(404, b'{"error":"toxic not found"}')])
    with pytest.raises(ToxiproxyError, match="404"):
        proxy.remove("latd")
    assert len(seen) == 1
