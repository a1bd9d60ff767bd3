"""The ``ansible-playbook`` that ansible-runner starts when the fork server is on (fork_server).

ansible-runner starts this file (through the executable the launcher writes, named
``ansible-playbook``, with the interpreter's ``-IS`` so it starts in a few milliseconds) in place
of the real one. It hands its arguments, environment, working directory and standard streams
(the runner's pty, as descriptors) to the fork server, which forks an already imported
``ansible-playbook`` for them, then waits for that run's exit status and exits with it. Signals it
gets (ansible-runner's timeout and cancel) are passed on to the run; if this process is killed,
the server sees its socket close and kills the run.

Whenever the server cannot take the run (not running, another environment, a configuration file
changed), this process becomes the real ``ansible-playbook`` (``exec``), so a run never depends on
the server. Standard library only, no package imports: it runs without site-packages, and the
launcher appends the call of ``main`` with the socket's and the real script's paths.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import struct
import sys

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def main(socket_path: str, real_playbook: str) -> None:
    argv = [real_playbook, *sys.argv[1:]]
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        directory = os.open(os.path.dirname(socket_path), os.O_RDONLY | os.O_DIRECTORY)
        # Through the directory's descriptor: a socket's path may not exceed 107 bytes.
        conn.connect("/proc/self/fd/%d/%s" % (directory, os.path.basename(socket_path)))
        os.close(directory)
        request = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
        fds = array.array("i", [0, 1, 2])
        conn.sendmsg(
            [struct.pack("!I", len(request)), request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
        )
        reply = _line(conn)
    except OSError as exc:
        _fall_back(argv, "fork server unavailable (%s)" % exc.strerror)
    if not reply.startswith("R"):
        _fall_back(argv, reply[1:] or "fork server closed the connection")
    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, lambda number, _frame: conn.sendall(b"K%d\n" % number))
    end = _line(conn)
    sys.exit(int(end[1:]) if end.startswith("E") else 255)


def _line(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = conn.recv(256)
        except InterruptedError:  # a forwarded signal's handler ran; the run goes on
            continue
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


def _fall_back(argv: list, why: str) -> None:
    """Become the real ``ansible-playbook``: same arguments, environment and streams."""
    sys.stderr.write("egress-proxies: %s: running ansible-playbook itself\n" % why)
    sys.stderr.flush()
    os.execv(argv[0], argv)
