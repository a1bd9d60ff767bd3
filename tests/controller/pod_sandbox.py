"""A stand-in for the Pod the controller's Deployment asks for, around a process on this machine.

tests/controller/test_installed_controller.py starts ``python pod_sandbox.py SPEC`` under
``unshare --mount --pid --net --fork --mount-proc``; this script, as root inside those new
namespaces, does what the kubelet and the container runtime would:

- bind-mounts each volume (``mounts``: source, target, read-only or not) at the path the
  Deployment mounts it at, the installed tree read-only at the image's paths;
- remounts the root read-only (per mount point: the machine's own root is untouched), as
  ``readOnlyRootFilesystem`` does;
- brings up the loopback of the new network namespace, where ``--metrics-addr=:8080`` and
  ``--health-addr=:8081`` bind without meeting anything on the machine;
- forks the network's stand-ins: the API server at ``KUBERNETES_SERVICE_HOST:PORT``
  (a TCP listener forwarding to a Unix socket the test serves, which forwards to the real
  API server outside), a listener answering TCP connects on ``pod_port`` (a kwok Pod runs
  nothing: this is its "Squid", for the controller's connect probe), and the reverse for the
  test: a Unix socket forwarding to the health port, which the test probes as the kubelet would;
- execs the container's command as its uid, gid and groups with no capabilities and
  ``no_new_privs`` (setpriv), with exactly the given environment: tini becomes PID 1.

Imported by the test for ``forward_unix_to_tcp`` (the outside half of the API server path).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _splice(client: socket.socket, connect) -> None:
    try:
        upstream = connect()
    except OSError:
        client.close()
        return
    threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
    threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()


def _serve(listener: socket.socket, connect) -> None:
    while True:
        try:
            client, _addr = listener.accept()
        except OSError:
            return
        _splice(client, connect)


def forward_unix_to_tcp(path: str, host: str, port: int) -> socket.socket:
    """Serve ``path`` (a Unix socket) in a thread, each connection spliced to ``host:port``;
    close the returned listener to stop."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    threading.Thread(
        target=_serve,
        args=(listener, lambda: socket.create_connection((host, port), timeout=10)),
        daemon=True,
    ).start()
    return listener


def _tcp_listener(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(64)
    return listener


def _unix_connect(path: str):
    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        return sock

    return connect


def _answer_and_close(listener: socket.socket) -> None:
    while True:
        client, _addr = listener.accept()
        client.close()


def _network_stand_ins(spec: dict, socket_dir: int, health: socket.socket) -> None:
    """The forked child: serves until the namespace's PID 1 (tini) exits and takes it along."""
    api = _tcp_listener("127.0.0.1", spec["api_port"])
    pod = _tcp_listener("0.0.0.0", spec["pod_port"])  # inside the private network namespace
    # The API server's socket through the directory opened before /tmp was mounted over.
    api_socket = "/proc/self/fd/%d/%s" % (socket_dir, os.path.basename(spec["api_socket"]))
    threads = [
        threading.Thread(target=_serve, args=(api, _unix_connect(api_socket)), daemon=True),
        threading.Thread(target=_answer_and_close, args=(pod,), daemon=True),
        threading.Thread(
            target=_serve,
            args=(health, lambda: socket.create_connection(("127.0.0.1", spec["health_port"]), timeout=5)),
            daemon=True,
        ),
    ]
    for thread in threads:
        thread.start()
    threading.Event().wait()


def mount_command(mount: list) -> list:
    """The mount(8) command of one ``[source, target, read_only]`` entry, whose source is a
    directory (bind-mounted) or an overlay: ``{"lower": dir or [dirs], "upper": dir, "work": dir}``
    (with only lower directories, a read-only one). A read-only bind needs a second command
    (``remount_read_only``)."""
    source, target, _read_only = mount
    if isinstance(source, str):
        return ["mount", "--bind", source, target]
    lower = source["lower"] if isinstance(source["lower"], list) else [source["lower"]]
    options = "lowerdir=" + ":".join(lower)
    if "upper" in source:
        options += ",upperdir=%s,workdir=%s" % (source["upper"], source["work"])
    return ["mount", "-t", "overlay", "overlay", "-o", options, target]


def _sources(mount: list) -> list:
    source = mount[0]
    if isinstance(source, str):
        return [source]
    lower = source["lower"] if isinstance(source["lower"], list) else [source["lower"]]
    return lower + [source[k] for k in ("upper", "work") if k in source]


def _mount_order(mounts: list) -> list:
    """Mounts that would hide another one's source (an emptyDir at /tmp over the test's scratch
    directories) come last."""

    def hides_a_source(mount) -> bool:
        return any(s.startswith(mount[1].rstrip("/") + "/") for other in mounts for s in _sources(other))

    return sorted(mounts, key=hides_a_source)


def main(spec_file: str) -> None:
    with open(spec_file, encoding="utf-8") as handle:
        spec = json.load(handle)
    assert os.getpid() == 1, "run me as the first process of a new PID namespace"
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    # Opened before the mounts: the test's sockets live in its scratch directory under /tmp,
    # which the Pod's own /tmp hides.
    socket_dir = os.open(os.path.dirname(spec["api_socket"]), os.O_PATH | os.O_DIRECTORY)
    health = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    health.bind(spec["health_socket"])
    health.listen(16)
    for mount in _mount_order(spec["mounts"]):
        subprocess.run(mount_command(mount), check=True)
        if mount[2]:  # an overlay of lower layers only is read-only already; this covers binds
            subprocess.run(["mount", "-o", "remount,bind,ro", mount[1]], check=True)
    # "bind" keeps this a per-mount-point flag: the file system itself stays writable outside.
    subprocess.run(["mount", "-o", "remount,bind,ro", "/"], check=True)
    if os.fork() == 0:  # pragma: no cover - the child serves until the namespace ends
        try:
            _network_stand_ins(spec, socket_dir, health)
        finally:
            os._exit(1)
    health.close()
    user = spec["user"]
    setpriv = [
        "setpriv",
        "--reuid=%d" % user["uid"],
        "--regid=%d" % user["gid"],
        "--groups=%s" % ",".join(str(g) for g in user["groups"]),
        "--inh-caps=-all",
        "--ambient-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]
    os.chdir(spec["workdir"])
    os.execvpe("setpriv", setpriv + spec["argv"], spec["env"])


if __name__ == "__main__":
    main(sys.argv[1])
