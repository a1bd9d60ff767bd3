"""Real traffic through a proxy under test: a loopback origin, and one GET sent to the proxy.

Shared by the provider, module and controller tests that prove a Squid forwards (200), asks for
credentials (407) or refuses a source (403). Only loopback addresses are used.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import http.server
import threading
import time


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello %s" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def origin_server():
    """A tiny HTTP server on 127.0.0.1, the target behind the proxy; yields ``(host, port)``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(("%s:%s" % (username, password)).encode("utf-8")).decode("ascii")


def fetch_via(proxy_ip: str, proxy_port: int, origin, source: str = "127.0.0.1", credentials=None):
    """One GET sent *to the proxy's address only*: a reply from origin proves Squid forwarded it.

    ``credentials`` is ``(username, password)`` sent as ``Proxy-Authorization``. Returns
    ``(status, body)``; a 407 also carries the challenge in the body's place when asked.
    """
    conn = http.client.HTTPConnection(proxy_ip, proxy_port, timeout=10, source_address=(source, 0))
    headers = {"Proxy-Authorization": basic(*credentials)} if credentials else {}
    try:
        conn.request("GET", "http://%s:%d/via-proxy" % tuple(origin), headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def until(what: str, check, seconds: float = 20.0):
    """Poll ``check`` until it is truthy (a wait for Squid's reconfigure, not a timing assertion)."""
    end = time.monotonic() + seconds
    while True:
        try:
            value = check()
        except (ConnectionError, http.client.HTTPException):
            # Squid's reconfigure closes and reopens its port: a connect is refused, or one
            # already accepted is reset or cut before a whole status line.
            value = False
        if value or time.monotonic() > end:
            assert value, "%s never happened" % what
            return value
        time.sleep(0.2)
