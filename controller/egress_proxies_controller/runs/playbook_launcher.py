"""How the executor starts ``ansible-playbook``: through the fork server, or as itself.

With the fork server on (the default; ``--no-ansible-fork-server`` turns it off), the launcher
keeps one fork_server process beside the controller, started at the first run and again after it
exits (it does when a run's environment or Ansible's configuration file changed), and writes the
stand-in ``ansible-playbook`` (fork_client, run with ``-IS``) that ansible-runner is given as
its ``binary``. Off, ansible-runner starts the real ``ansible-playbook`` as before.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading

from . import environ_mark, work_dir
from .process_tree import RUN_ENV

log = logging.getLogger(__name__)


class PlaybookLauncher:
    def __init__(self, work_dir: str, fork_server: bool = True):
        self.enabled = fork_server
        self.directory = os.path.join(work_dir, "fork-server")
        self.socket_path = os.path.join(self.directory, "socket")
        self.stand_in = os.path.join(self.directory, "bin", "ansible-playbook")
        self.real = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
        self.starts = 0
        self._server: subprocess.Popen | None = None
        self._lock = threading.Lock()

    @property
    def server_pid(self) -> int | None:
        """The fork server's pid while it runs (the benchmark reads its CPU)."""
        server = self._server
        return server.pid if server is not None and server.poll() is None else None

    def runner_arguments(self, playbook: str) -> dict:
        """ansible-runner's arguments that start ``playbook``: the real script, or the stand-in
        (whose ``binary`` makes ansible-runner pass the playbook as an argument of its own)."""
        if not self.enabled:
            return {"playbook": playbook}
        try:
            self._ensure_server()
        except (OSError, work_dir.UnsafeWorkDir) as exc:  # a run never depends on the server
            log.warning("fork server not started (%s): ansible-runner starts ansible-playbook", exc)
            return {"playbook": playbook}
        return {"binary": self.stand_in, "cmdline": playbook}

    def _ensure_server(self) -> None:
        with self._lock:
            if self._server is not None and self._server.poll() is None:
                return
            if self._server is not None:
                log.info("fork server exited (status %s); starting another", self._server.returncode)
            work_dir.private_dir(self.directory)  # root runs the stand-in: nobody else's (issue 40)
            work_dir.private_dir(os.path.dirname(self.stand_in))
            self._write_stand_in()
            if os.path.exists(self.socket_path):
                os.unlink(self.socket_path)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            directory = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                # Through the directory's descriptor: a socket's path may not exceed 107 bytes,
                # and a work directory's can (the stand-in connects the same way).
                listener.bind("/proc/self/fd/%d/%s" % (directory, os.path.basename(self.socket_path)))
            except OSError:
                listener.close()
                raise
            finally:
                os.close(directory)
            os.chmod(self.socket_path, 0o600)
            listener.listen(64)  # connections wait in the backlog while the server starts
            env = dict(os.environ, **{RUN_ENV: environ_mark.PLACEHOLDER})
            safe_path = ["-P"] if sys.version_info >= (3, 11) else []  # no working directory on sys.path
            argv = [sys.executable, *safe_path, "-m", "egress_proxies_controller.runs.fork_server"]
            fd = listener.fileno()
            try:
                self._server = subprocess.Popen(
                    [*argv, str(fd)], env=env, stdin=subprocess.DEVNULL, cwd="/", pass_fds=(fd,)
                )
            finally:
                listener.close()  # the server holds it now
            self.starts += 1
            log.info("fork server started (pid %d, socket %s)", self._server.pid, self.socket_path)

    def _write_stand_in(self) -> None:
        with open(os.path.join(os.path.dirname(__file__), "fork_client.py")) as handle:
            source = handle.read()
        text = "#!%s -IS\n%s\nmain(%r, %r)\n" % (sys.executable, source, self.socket_path, self.real)
        temporary = self.stand_in + ".new"
        with open(temporary, "w") as handle:
            handle.write(text)
        os.chmod(temporary, 0o700)
        os.replace(temporary, self.stand_in)

    def close(self) -> None:
        """Stop the server (its runs in flight go on; the executor's own kill covers them)."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None and server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
