"""A tiny HTTP server for the demo: answers every GET with JSON naming the client address.

Through a local proxy the client address is the proxy's own egress address, which is how the
demo proves a response came through that proxy. Binds 127.0.0.1 on a free port, writes
``{"port": ..., "pid": ...}`` to --info-file, and exits by itself after --lifetime seconds.
"""

import argparse
import http.server
import json
import os
import threading


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"client": self.client_address[0], "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--info-file", required=True)
    parser.add_argument("--lifetime", type=float, default=300.0)
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = args.info_file + ".tmp"
    with open(tmp, "w") as handle:
        json.dump({"port": server.server_address[1], "pid": os.getpid()}, handle)
    os.rename(tmp, args.info_file)
    threading.Timer(args.lifetime, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
