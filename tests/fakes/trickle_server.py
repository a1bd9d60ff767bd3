"""A real HTTP server on 127.0.0.1 that answers 200 and then sends its body one byte at a time,
slowly: every socket read succeeds within any per-read timeout, the whole answer never ends in
time. It stands for a slow or hostile endpoint (or a token server) that only a deadline on the
whole call can bound."""

from __future__ import annotations

import http.server
import threading
import time


class TrickleServer:
    def __init__(self, interval: float = 0.2, total: int = 10_000):
        self.stop = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(total))
                self.end_headers()
                for _byte in range(total):
                    if server.stop.is_set():
                        return
                    try:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    except OSError:
                        return
                    time.sleep(interval)

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.endpoint = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, name="trickle-server", daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
