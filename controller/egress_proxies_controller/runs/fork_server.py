"""The fork server: ``ansible-playbook`` imported once, forked for every run.

Half of what one controller run costs is ``ansible-playbook`` importing ansible-core
(docs/performance.md, "The fixed cost of one ansible run"). This process, started by the
executor beside the controller (playbook_launcher), imports it once; for each run the stand-in
``ansible-playbook`` (fork_client) sends its arguments, environment, working directory and
streams, and the server forks a child that becomes that run's ``ansible-playbook``: same streams,
same environment, ``PlaybookCLI.cli_executor`` called as the real script calls it.

ansible-core reads its configuration when ``ansible.constants`` is imported, so the server adopts
the environment of the first run before it imports anything of Ansible, and forks only for runs
whose environment is the same but for the keys each run sets for itself (``PER_RUN``) and whose
configuration file is the same, unchanged. Any other run is told to fall back (the stand-in execs
the real ``ansible-playbook``), and the server, now stale, exits once its runs have ended; the
launcher starts a new one for the next run. The one constant made from a per-run key (the fact
cache's directory) is set again in each child.

Each child is a session of its own carrying its run's mark (environ_mark), so the executor's
process_tree finds it and its workers; if the stand-in goes away (ansible-runner's timeout kills
it), the child's session is killed. The server exits when the controller that started it does,
and after ``IDLE_SECONDS`` without a run.

``python -m egress_proxies_controller.runs.fork_server FD``: FD is the listening Unix socket, bound
by the launcher (so a stand-in can connect as soon as the server exists, and the server's
command line names no run directory).
"""

from __future__ import annotations

import array
import importlib
import io
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
import warnings

from . import environ_mark
from .process_tree import RUN_ENV

# Set by ansible-runner or the executor for each run; read at run time, never at import.
PER_RUN = frozenset(
    {
        RUN_ENV,
        "EGRESS_PROXIES_PROVIDERS_FILE",
        "AWX_ISOLATED_DATA_DIR",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION",
        "TRACEPARENT",
        "TRACESTATE",
        "PWD",
        "OLDPWD",
        "_",
    }
)
IDLE_SECONDS = 300.0  # with no run for this long the server exits (the launcher starts another)
PER_RUN_CONSTANTS = ("CACHE_PLUGIN_CONNECTION",)  # ansible.constants made from PER_RUN keys

# What one of the controller's runs imports beyond ``ansible.cli.playbook`` (the plugin loader
# takes a plugin already in sys.modules as loaded). Never ansible-runner's awx_display callback:
# it reads its run's artifact directory when it is imported.
PRELOAD = (
    "ansible.executor.playbook_executor",
    "ansible.executor.task_executor",
    "ansible.executor.process.worker",
    "ansible.playbook.handler",
    "ansible.playbook.included_file",
    "ansible.playbook.role_include",
    "ansible.module_utils.connection",
    "ansible.utils.hashing",
    "multiprocessing.synchronize",
    "multiprocessing.shared_memory",
    *("ansible.plugins.inventory." + name for name in ("auto", "host_list", "ini", "script", "toml", "yaml")),
    *("ansible.plugins.callback." + name for name in ("default", "junit", "minimal", "oneline", "tree")),
    *("ansible.plugins.connection." + name for name in ("local", "paramiko_ssh", "psrp", "ssh", "winrm")),
    *("ansible.plugins.shell." + name for name in ("cmd", "powershell", "sh")),
    "ansible.plugins.action.normal",
    "ansible.plugins.become.su",
    "ansible.plugins.become.sudo",
    "ansible.plugins.cache.jsonfile",
    "ansible.plugins.strategy.linear",
    "ansible.plugins.vars.host_group_vars",
)


def _report_warnings(caught: list) -> None:
    """What importing ansible-core warned about, one line each on the controller's log (this
    process's stderr), leaving out a dependency's notice of its own future API (cryptography's
    ``CryptographyDeprecationWarning`` about DSA, met through ansible-core's SSH agent code):
    nothing an operator can act on, and printed at every fork server start."""
    for item in caught:
        category = item.category
        if issubclass(
            category, (DeprecationWarning, PendingDeprecationWarning)
        ) or category.__name__.endswith("DeprecationWarning"):
            continue
        print("egress-proxies fork server: %s: %s" % (category.__name__, item.message), file=sys.stderr)


class Server:
    def __init__(self, listener_fd: int):
        self.parent = os.getppid()
        self.listener = socket.socket(fileno=listener_fd)  # bound and listening (the launcher's)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.runs = {}  # child pid -> the stand-in's connection
        self.adopted = None  # the environment ansible-core was imported with
        self.config = None  # (path, mtime) of the configuration file it read
        self.stale = False
        self.marked = environ_mark.placeholder_offset(RUN_ENV) >= 0

    def serve(self) -> None:
        last_run = time.monotonic()
        while not (self.stale and not self.runs) and os.getppid() == self.parent:
            if self.runs:
                last_run = time.monotonic()
            elif time.monotonic() - last_run > IDLE_SECONDS:
                return
            for key, _events in self.selector.select(timeout=0.2):
                if key.fileobj is self.listener:
                    self._accept()
                else:
                    self._from_client(key.fileobj, key.data)
            self._reap()

    def _accept(self) -> None:
        conn, _addr = self.listener.accept()
        try:
            request, fds = _receive(conn)
        except (OSError, ValueError):
            conn.close()
            return
        try:
            why = self._refusal(request)
            if why:
                conn.sendall(("F%s\n" % why).encode())
                conn.close()
                return
            pid = os.fork()
            if pid == 0:
                self._become_run(request, fds)  # never returns
            conn.sendall(b"R\n")
            self.runs[pid] = conn
            self.selector.register(conn, selectors.EVENT_READ, pid)
        finally:
            for fd in fds:
                os.close(fd)

    def _refusal(self, request: dict) -> str:
        """Why this run cannot be forked from here ('' when it can); imports Ansible at the first."""
        env, run_id = request["env"], request["env"].get(RUN_ENV, "")
        if self.stale:
            return "the fork server is stale"
        if not self.marked or len(run_id) != len(environ_mark.PLACEHOLDER):
            return "the run has no mark the fork server can carry"
        if self.adopted is None:
            self._import_ansible(env, request["cwd"])
        if _fixed(env) != _fixed(self.adopted):
            self.stale = True
            return "the run's environment is not the fork server's"
        if _config_file(request["cwd"], env) != self.config:
            self.stale = True
            return "the Ansible configuration file is not the one the fork server read"
        return ""

    def _import_ansible(self, env: dict, cwd: str) -> None:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)  # where ansible-core looks for ansible.cfg, as the run's would
        with warnings.catch_warnings(record=True) as caught:
            import ansible.cli.playbook  # noqa: F401  (the cost every run no longer pays)

            for name in PRELOAD:
                try:
                    importlib.import_module(name)
                except Exception:
                    pass
        _report_warnings(caught)
        os.chdir("/")
        self.adopted = dict(env)
        self.config = _config_file(cwd, env)

    def _become_run(self, request: dict, fds: list) -> None:
        """In the child: become the run's ``ansible-playbook`` and exit with its status."""
        code = 250
        try:
            os.setsid()
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
                signal.signal(signum, signal.SIG_DFL)
            self.selector.close()
            self.listener.close()
            for conn in self.runs.values():
                conn.close()
            environ_mark.write(RUN_ENV, request["env"][RUN_ENV])
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
            sys.stdout, sys.stderr = _unbuffered(1), _unbuffered(2)  # PYTHONUNBUFFERED, as the runner sets
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = list(request["argv"])
            from ansible import constants
            from ansible.cli.playbook import PlaybookCLI

            for name in PER_RUN_CONSTANTS:
                constants.set_constant(name, constants.config.get_config_value(name))
            PlaybookCLI.cli_executor(sys.argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException as exc:
            print("egress-proxies fork server: %s: %s" % (type(exc).__name__, exc), file=sys.stderr)
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(code)

    def _from_client(self, conn: socket.socket, pid: int) -> None:
        """A forwarded signal, or the stand-in gone: the run's session gets the signal or SIGKILL."""
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        signals = [
            int(part) for part in data.decode(errors="replace").split("K")[1:] if part.strip().isdigit()
        ]
        for signum in signals if data else [signal.SIGKILL]:
            _kill_session(pid, signum)
        if not data:
            self.selector.unregister(conn)

    def _reap(self) -> None:
        while self.runs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.runs.pop(pid, None)
            if conn is None:
                continue
            try:
                conn.sendall(b"E%d\n" % os.waitstatus_to_exitcode(status))
            except OSError:
                pass
            try:
                self.selector.unregister(conn)
            except (KeyError, ValueError):
                pass  # unregistered when the stand-in went away
            conn.close()


def _receive(conn: socket.socket) -> tuple:
    """One request: a length-prefixed JSON document and the three stream descriptors."""
    fds = array.array("i")
    data, ancillary, _flags, _addr = conn.recvmsg(4, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if len(data) != 4 or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("malformed request")
    (length,) = struct.unpack("!I", data)
    body = b""
    while len(body) < length:
        chunk = conn.recv(length - len(body))
        if not chunk:
            raise ValueError("truncated request")
        body += chunk
    return json.loads(body), list(fds)


def _unbuffered(fd: int) -> io.TextIOWrapper:
    raw = io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", line_buffering=True, write_through=True)


def _fixed(env: dict) -> dict:
    return {key: value for key, value in env.items() if key not in PER_RUN}


def _config_file(cwd: str, env: dict) -> tuple:
    """The configuration file ansible-core would read for a run in ``cwd`` with ``env``, and its
    modification time (ansible.config.manager's search order: ANSIBLE_CONFIG, ./ansible.cfg,
    ~/.ansible.cfg, /etc/ansible/ansible.cfg)."""
    home = env.get("HOME", "")
    candidates = [env.get("ANSIBLE_CONFIG", ""), os.path.join(cwd, "ansible.cfg")]
    candidates += [os.path.join(home, ".ansible.cfg") if home else "", "/etc/ansible/ansible.cfg"]
    for path in candidates:
        if path and os.path.exists(path):
            if os.path.isdir(path):
                path = os.path.join(path, "ansible.cfg")
            try:
                return path, os.stat(path).st_mtime_ns
            except OSError:
                return path, None
    return None, None


def _kill_session(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: list) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = Server(int(argv[0]))
    try:
        server.serve()
    finally:
        server.listener.close()  # a stand-in that connects now is refused, and falls back
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
