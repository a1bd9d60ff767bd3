"""A loopback TCP server that accepts connections and never answers: a provider API that hangs.

``accepted`` is set once a client connected, ``closed`` once a client went away (its process
died); ``close()`` drops every connection, so whoever still waits fails at once.
"""

from __future__ import annotations

import json
import os
import socket
import threading


class Blackhole:
    """Accepts TCP connections on loopback and never answers; records when each one closes."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self.closed = threading.Event()
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            self.accepted.set()
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn):
        self.conns.append(conn)
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass
        self.closed.set()  # the peer (the module process) is gone

    def close(self):
        """Stop listening and drop every connection: whoever waits on one fails at once."""
        self.sock.close()
        for conn in self.conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def blackhole_kubeconfig(hole: Blackhole, directory) -> str:
    path = os.path.join(str(directory), "hole.kubeconfig")
    cluster = {"server": "https://127.0.0.1:%d" % hole.port, "insecure-skip-tls-verify": True}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "hole", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "hole", "user": "u"}}],
        "current-context": "c",
    }
    with open(path, "w") as handle:
        json.dump(doc, handle)
    return path


def restart_with_hole(e2e, directory, extra_args=()) -> Blackhole:
    """Restart ``e2e``'s controller with one more provider, ``hole``: a kubernetes provider whose
    API server is a Blackhole (calls to it hang for up to 600 s)."""
    hole = Blackhole()
    providers = json.loads(json.dumps(e2e.providers))
    kubernetes = {"kubeconfig": blackhole_kubeconfig(hole, directory), "requestTimeoutSeconds": 600}
    providers["providers"].append({"name": "hole", "type": "kubernetes", "kubernetes": kubernetes})
    e2e.controller.stop()
    e2e.controller.write_providers(providers)
    e2e.controller.start(extra_args=["--call-timeout", "600", *extra_args])
    e2e.controller.wait_ready()
    return hole
