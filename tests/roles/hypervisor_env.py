"""The hypervisor surroundings the molecule scenarios ``libvirt_host`` and ``proxy`` converge on:
everything a real KVM host has before the ``libvirt_host`` role runs, on loopback, in a private
directory.

Who calls it: ``tests/roles/test_molecule.py`` (``up`` before and ``down`` after the scenarios),
or a person: ``python tests/roles/hypervisor_env.py up DIR`` prints the environment the
scenarios read (``MOLECULE_HV_*``), ``... down DIR`` undoes it.

What ``up`` provides: the machine-wide libvirt test lock (the same lock the libvirt fixtures of
tests/contract take: held by this process when a test calls ``up(..., in_process=True)``, by a
detached helper process when a person runs ``up``), a libvirtd.conf with a private socket
directory and a wrapper that starts the daemons in a private mount namespace (the role starts
them through it, so the scenarios coexist with a libvirtd the machine runs itself), an sshd on
127.0.0.1 (free port) reading its authorized keys from a file the role fills, an operator key
pair and known_hosts, two images served over HTTP on loopback by the helper (``base``, a small
empty qcow2, and ``guest``, the bootable real-guest image of tests/guest), and the real-guest
network of tests/guest/network.py (a bridge for the guests, a test namespace with DHCP, an HTTP
server and the clients; in a test process, the one the real-guest fixtures share). The guests'
domain type is the guest-level probe's (tests/contract/hypervisor_probe.py): KVM only where a
KVM guest really booted the image. It starts neither libvirtd nor virtlogd: the role does.

What ``down`` guarantees: the domains and the pool the scenarios made are removed, the daemons
the role started (pid files in DIR/run) and sshd are stopped by pid, the guest network is
removed (its processes stopped by pid), the lock released, DIR removed. Nothing is ever stopped
by name.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, ".venv", "collections")]

from contract import hypervisor_probe, leftovers, machine_lock, pids, readiness  # noqa: E402
from contract.libvirt_host import NAMESPACE_WRAPPER, SSHD, LibvirtHost, make_image  # noqa: E402
from guest import build_image  # noqa: E402
from guest import network as guest_network  # noqa: E402
from listen_ports import free_port  # noqa: E402

POOL = "egress-molecule"
IMAGES = ("base.qcow2", "guest.qcow2")  # served as /<name>
HOST_NAME = "hv1"


def serve(directory: str, lock: bool) -> None:
    """The detached helper: take the lock (when asked), serve the images, write serve.json, run
    until SIGTERM."""
    if lock:
        machine_lock.acquire(on_first=leftovers.remove_crashed_sessions)
        leftovers.mark_owner(directory)
    bodies = {}
    for name in IMAGES:
        with open(os.path.join(directory, name), "rb") as handle:
            bodies["/" + name] = handle.read()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            # One line per request: the scenarios prove a seeded image is not fetched again.
            with open(os.path.join(directory, "requests.log"), "a", encoding="utf-8") as log:
                log.write(self.path + "\n")
            body = bodies.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tmp = os.path.join(directory, "serve.json.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump({"port": server.server_address[1]}, handle)
    os.replace(tmp, os.path.join(directory, "serve.json"))
    stop.wait()
    server.shutdown()
    if lock:
        machine_lock.release()


def guest_domain_type(image: str) -> hypervisor_probe.Choice:
    """The guest-level probe's choice (the proxy scenario boots the real-guest image); when the
    cache does not answer, a throwaway test hypervisor runs the probe."""
    started = []

    def connect():
        if not started:
            started.append(LibvirtHost().start())
        return started[0].direct()

    scratch = tempfile.mkdtemp(prefix="egress-libvirt-probe-", dir="/tmp")
    os.chmod(scratch, 0o755)
    leftovers.mark_owner(scratch)
    try:
        return hypervisor_probe.choose(connect, scratch, level="guest", image=image)
    finally:
        for host in started:
            host.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def up(directory: str, in_process: bool = False) -> dict:
    """The surroundings in ``directory``. ``in_process``: the caller (a test) holds the lock and
    shares its guest network; otherwise a detached helper holds the lock and the network
    outlives this process, for a person's shell."""
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    os.chmod(directory, 0o755)  # qemu runs as libvirt-qemu and must reach the pool under it
    if in_process:
        machine_lock.acquire(on_first=leftovers.remove_crashed_sessions)
        leftovers.mark_owner(directory)
    with open(os.path.join(directory, "mode"), "w", encoding="utf-8") as handle:
        handle.write("in-process" if in_process else "detached")
    for sub in ("run", "ssh", "pools", "namespace"):
        os.makedirs(os.path.join(directory, sub), mode=0o755, exist_ok=True)
    _data, sha256 = make_image(directory)
    guest_dir = build_image.ensure()
    shutil.copy(os.path.join(guest_dir, "guest.qcow2"), os.path.join(directory, "guest.qcow2"))
    with open(os.path.join(guest_dir, "image.json"), encoding="utf-8") as handle:
        guest_sha256 = json.load(handle)["sha256"]
    # Before the helper takes the lock: a probe may need a throwaway hypervisor, under the lock.
    choice = guest_domain_type(os.path.join(directory, "guest.qcow2"))
    print(choice.line, file=sys.stderr, flush=True)
    helper = subprocess.Popen(
        [sys.executable, __file__, "serve", directory, "lock" if not in_process else "nolock"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(directory, "serve.log"), "ab"),  # noqa: SIM115 - the child's
        start_new_session=True,
    )
    with open(os.path.join(directory, "helper.pid"), "w", encoding="utf-8") as handle:
        handle.write(str(helper.pid))
    if not in_process:
        leftovers.mark_owner(directory, helper.pid)
    # The lock may be held by another test session: wait as long as the libvirt fixtures would.
    served = os.path.join(directory, "serve.json")
    readiness.wait_for(lambda: os.path.exists(served), 1800, "the libvirt test lock")
    with open(os.path.join(directory, "serve.json"), encoding="utf-8") as handle:
        http_port = json.load(handle)["port"]
    # Under the lock now (the helper holds it): the guest network, left running for the scenarios.
    busybox = os.path.join(guest_dir, "busybox")
    if in_process:
        network = guest_network.acquire_shared(busybox)
    else:
        network = guest_network.GuestNetwork(busybox, os.path.join(directory, "guest-network")).start()
    ssh = os.path.join(directory, "ssh")
    for name in ("host_key", "operator_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", os.path.join(ssh, name)],
            check=True,
        )
    sshd_port = free_port()
    with open(os.path.join(ssh, "host_key.pub"), encoding="utf-8") as handle:
        kind, blob = handle.read().split()[:2]
    with open(os.path.join(ssh, "known_hosts"), "w", encoding="utf-8") as handle:
        handle.write("[127.0.0.1]:%d %s %s\n" % (sshd_port, kind, blob))
    run = os.path.join(directory, "run")
    with open(os.path.join(directory, "libvirtd.conf"), "w", encoding="utf-8") as handle:
        handle.write(
            'unix_sock_dir = "%s"\nunix_sock_group = "root"\nunix_sock_rw_perms = "0700"\n'
            'auth_unix_rw = "none"\nauth_unix_ro = "none"\nlog_outputs = "3:file:%s"\n'
            % (run, os.path.join(directory, "libvirtd.log"))
        )
    conf = os.path.join(ssh, "sshd_config")
    with open(conf, "w", encoding="utf-8") as handle:
        handle.write(
            "ListenAddress 127.0.0.1:%d\nHostKey %s\nAuthorizedKeysFile %s\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile %s\n"
            "MaxStartups 100\nMaxSessions 100\n"
            % (
                sshd_port,
                os.path.join(ssh, "host_key"),
                os.path.join(ssh, "authorized_keys"),
                os.path.join(directory, "sshd.pid"),
            )
        )
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    subprocess.run([SSHD, "-f", conf, "-E", os.path.join(ssh, "sshd.log")], check=True)
    readiness.wait_for(lambda: pids.read_pid(os.path.join(directory, "sshd.pid")) > 0, 20, "sshd")
    env = {
        "MOLECULE_HV_DIR": directory,
        "MOLECULE_HV_SOCKET": os.path.join(run, "libvirt-sock"),
        "MOLECULE_HV_LIBVIRTD_CONFIG": os.path.join(directory, "libvirtd.conf"),
        "MOLECULE_HV_RUN_DIR": run,
        "MOLECULE_HV_POOL": POOL,
        "MOLECULE_HV_POOL_ROOT": os.path.join(directory, "pools"),
        "MOLECULE_HV_SSH_PORT": str(sshd_port),
        "MOLECULE_HV_SSH_KEY": os.path.join(ssh, "operator_key"),
        "MOLECULE_HV_KNOWN_HOSTS": os.path.join(ssh, "known_hosts"),
        "MOLECULE_HV_AUTHORIZED_KEYS": os.path.join(ssh, "authorized_keys"),
        "MOLECULE_HV_IMAGE_URL": "http://127.0.0.1:%d/base.qcow2" % http_port,
        "MOLECULE_HV_IMAGE_SHA256": sha256,
        "MOLECULE_HV_GUEST_IMAGE_URL": "http://127.0.0.1:%d/guest.qcow2" % http_port,
        "MOLECULE_HV_GUEST_IMAGE_SHA256": guest_sha256,
        "MOLECULE_HV_DOMAIN_TYPE": choice.domain_type,
        "MOLECULE_HV_DAEMON_WRAPPER": "%s %s" % (NAMESPACE_WRAPPER, os.path.join(directory, "namespace")),
        "MOLECULE_HV_VIRTLOGD_SOCKET": os.path.join(directory, "namespace", "run", "virtlogd-sock"),
        "MOLECULE_HV_BRIDGE": network.bridge,
        "MOLECULE_HV_NETNS": network.namespace,
        "MOLECULE_HV_MARKER": network.marker,
        "MOLECULE_HV_MARKER_URL": network.marker_url,
        "MOLECULE_HV_REQUESTS_LOG": os.path.join(directory, "requests.log"),
    }
    with open(os.path.join(directory, "env.json"), "w", encoding="utf-8") as handle:
        json.dump(env, handle, indent=1)
    return env


def down(directory: str) -> None:
    directory = os.path.abspath(directory)
    try:
        with open(os.path.join(directory, "mode"), encoding="utf-8") as handle:
            in_process = handle.read() == "in-process"
    except OSError:
        in_process = False
    socket_path = os.path.join(directory, "run", "libvirt-sock")
    try:
        if os.path.exists(socket_path):
            _remove_libvirt_objects("qemu:///system?socket=%s" % socket_path)
        if in_process:
            guest_network.release_shared()
        else:
            guest_network.remove_leftovers()  # before the helper ends: the lock covers it
        for name in ("run/libvirtd.pid", "run/virtlogd.pid", "sshd.pid", "helper.pid"):
            pid = pids.read_pid(os.path.join(directory, name))
            if pid:
                pids.stop(pid)
        shutil.rmtree(directory, ignore_errors=True)
    finally:
        if in_process:
            machine_lock.release()


def _remove_libvirt_objects(uri: str) -> None:
    """Domains named proxy-* (the scenarios' only domains) and the scenarios' persistent pool,
    whose definition a privileged libvirtd keeps under /etc/libvirt/storage."""

    def virsh(*args):
        return subprocess.run(["virsh", "-c", uri, *args], capture_output=True, text=True, check=False)

    names = virsh("list", "--all", "--name").stdout.split()
    for name in names:
        if name.startswith("proxy-"):
            virsh("destroy", name)
            virsh("undefine", name, "--nvram", "--managed-save", "--snapshots-metadata")
    virsh("pool-destroy", POOL)
    virsh("pool-undefine", POOL)


def main(argv: list) -> int:
    if len(argv) < 2 or argv[0] not in ("up", "down", "serve"):
        print("usage: hypervisor_env.py up|down DIR", file=sys.stderr)
        return 2
    command, directory = argv[:2]
    if command == "serve":
        serve(directory, lock=argv[2:] == ["lock"])
    elif command == "up":
        for key, value in up(directory).items():
            print("export %s=%s" % (key, value))
    else:
        down(directory)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
