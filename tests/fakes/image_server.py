"""A real HTTP server on 127.0.0.1 (a free port) that serves base images to the libvirt provider,
and can misbehave on request: cut a body off, omit Content-Length, answer an error status, or
hold a body half-sent until the test releases it. Counts requests per path."""

from __future__ import annotations

import http.server
import threading


class ImageServer:
    def __init__(self):
        self.files = {}  # path -> bytes
        self.cut = {}  # path -> bytes sent before the connection is closed
        self.no_length = set()
        self.status = {}  # path -> HTTP status to answer instead
        self.hold = {}  # path -> (bytes first, Event sent-half, Event release)
        self.requests = {}
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = self.path
                server.requests[path] = server.requests.get(path, 0) + 1
                if path in server.status:
                    self.send_error(server.status[path])
                    return
                body = server.files.get(path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                if path not in server.no_length:
                    self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                if path in server.cut:
                    self.wfile.write(body[: server.cut[path]])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if path in server.hold:
                    first, sent, release = server.hold[path]
                    self.wfile.write(body[:first])
                    self.wfile.flush()
                    sent.set()
                    release.wait(60)
                    try:
                        self.wfile.write(body[first:])
                    except OSError:
                        pass
                    return
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return "http://%s:%d" % (host, port)

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        for _first, _sent, release in self.hold.values():
            release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
