"""A real Kubernetes control plane on loopback for the tests: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok (one simulated node).

Who uses it: the session fixture in ``kube_fixture.py`` and, by hand, ``python
tests/cluster/kube_cluster.py up|down DIR``. ``build.sh`` provides the binaries (building them
once per machine and version set).

What it guarantees: every process listens on 127.0.0.1 on a port picked free at start; the API
server authorizes with RBAC, signs service-account tokens with a key generated here and
serves a certificate from a CA generated here; ``DIR/admin.kubeconfig`` is a cluster-admin
(system:masters) kubeconfig; one kwok node exists and is Ready, so a scheduled Pod becomes
Running with an IP (from the node's podCIDR, a random 127.x range: nothing ever routes
there); the ``default`` ServiceAccount exists when ``start`` returns. ``stop`` ends exactly the
processes it started, by pid (SIGTERM, then SIGKILL), never by name.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import random
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

from listen_ports import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_SCRIPT = os.path.join(HERE, "build.sh")
NODE_NAME = "kwok-node-0"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
START_TIMEOUT = 120.0


def say(message: str) -> None:
    # The real stderr: progress must show even while pytest captures output.
    sys.__stderr__.write("[kube-cluster %s] %s\n" % (time.strftime("%H:%M:%S"), message))
    sys.__stderr__.flush()


def ensure_binaries() -> str:
    """Run build.sh (a no-op when the cached set is complete) and return the bin directory."""
    started = time.monotonic()
    out = subprocess.run(
        ["bash", BUILD_SCRIPT], stdout=subprocess.PIPE, stderr=sys.__stderr__, text=True, check=False
    )
    if out.returncode != 0:
        raise RuntimeError("tests/cluster/build.sh failed (exit %d); see its output above" % out.returncode)
    bindir = out.stdout.strip().splitlines()[-1]
    took = time.monotonic() - started
    if took > 5:
        say("control plane binaries ready in %.0fs: %s" % (took, bindir))
    return bindir


# -- certificates and keys --------------------------------------------------------------------


def _write(path: str, data: bytes, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def make_pki(directory: str) -> dict:
    """A CA, the API server's serving certificate, an admin client certificate and the
    service-account signing key pair; returns their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(hours=1), now + datetime.timedelta(days=7))

    def key_pem(key) -> bytes:
        return key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def name(cn: str, org: str | None = None):
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        if org:
            attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
        return x509.Name(attrs)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(name("egress-proxies-test-ca"))
        .issuer_name(name("egress-proxies-test-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(cn: str, org: str | None, server: bool):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(cn, org))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(valid[0])
            .not_valid_after(valid[1])
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.DNSName("kubernetes.default.svc"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
        return key, builder.sign(ca_key, hashes.SHA256())

    paths = {}

    def save(label: str, key, cert=None) -> None:
        paths[label + "_key"] = os.path.join(directory, label + ".key")
        _write(paths[label + "_key"], key_pem(key))
        if cert is not None:
            paths[label + "_crt"] = os.path.join(directory, label + ".crt")
            _write(paths[label + "_crt"], cert.public_bytes(serialization.Encoding.PEM), 0o644)

    save("ca", ca_key, ca_cert)
    save("serving", *leaf("kube-apiserver", None, True))
    save("admin", *leaf("egress-proxies-test-admin", "system:masters", False))
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    save("sa", sa_key)
    paths["sa_pub"] = os.path.join(directory, "sa.pub")
    _write(
        paths["sa_pub"],
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        0o644,
    )
    return paths


def kubeconfig_text(server: str, ca_path: str, user: dict, name: str = "egress-test") -> str:
    """A kubeconfig (JSON is valid YAML) for one cluster and one user entry."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority": ca_path}}],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
        },
        indent=2,
    )


# -- the control plane ------------------------------------------------------------------------


class ControlPlane:
    """The processes of one test cluster, all under ``directory``."""

    def __init__(
        self,
        directory: str,
        bindir: str | None = None,
        *,
        max_pods: int = 110,
        pod_cidr_prefix: int = 24,
        die_with_parent: bool = False,
    ):
        """``max_pods`` and ``pod_cidr_prefix`` size the kwok node: the defaults suit the tests;
        the controller benchmark raises them to fit 1000 Pods (a /21 holds 2046 addresses).
        ``die_with_parent`` (the pytest fixture): if pytest itself is killed, the kernel ends
        the processes too."""
        self.dir = os.path.abspath(directory)
        self.bindir = bindir
        self.max_pods = max_pods
        self.pod_cidr_prefix = pod_cidr_prefix
        self.die_with_parent = die_with_parent
        self.procs: dict = {}
        self.argv: dict = {}  # each component's argv, for restart()
        self.readiness: dict = {}  # each component's readiness probe, for restart()
        self.server = ""
        self.kubeconfig = os.path.join(self.dir, "admin.kubeconfig")
        self.pki: dict = {}
        self.pod_cidr = ""
        self.timings: dict = {}

    # process handling

    def _spawn(self, name: str, args: list) -> None:
        self.argv[name] = args
        with open(os.path.join(self.dir, name + ".log"), "ab") as log:
            proc = subprocess.Popen(
                [os.path.join(self.bindir, args[0]), *args[1:]],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # our own process group: a Ctrl-C in pytest reaches us only
                cwd=self.dir,
                preexec_fn=_die_with_parent if self.die_with_parent else None,
            )
        self.procs[name] = proc
        self._save_pids()

    def _save_pids(self) -> None:
        with open(os.path.join(self.dir, "pids.json"), "w") as handle:
            json.dump({k: p.pid for k, p in self.procs.items()}, handle)

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(
                    "%s exited with %s during start; last lines of %s.log:\n%s"
                    % (name, proc.returncode, name, self.tail(name))
                )

    def tail(self, name: str, lines: int = 30) -> str:
        try:
            with open(os.path.join(self.dir, name + ".log"), errors="replace") as handle:
                return "".join(handle.readlines()[-lines:])
        except OSError:
            return ""

    def _wait(self, what: str, probe, timeout: float = START_TIMEOUT) -> None:
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            self._check_alive()
            try:
                if probe():
                    return
            except Exception as exc:  # the probe's failure is the answer "not yet"
                last = exc
            time.sleep(0.2)
        raise RuntimeError("%s not ready after %.0fs (last error: %s)" % (what, timeout, last))

    # HTTP probes with the admin certificate

    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.pki["ca_crt"])
        ctx.load_cert_chain(self.pki["admin_crt"], self.pki["admin_key"])
        return ctx

    def raw(self, method: str, path: str, body: dict | None = None, timeout: float = 5.0) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        with urllib.request.urlopen(req, context=self._ssl(), timeout=timeout) as resp:
            return resp.read()

    def request(self, method: str, path: str, body: dict | None = None, timeout: float = 5.0):
        return json.loads(self.raw(method, path, body, timeout) or b"null")

    # start / stop

    def start(self) -> ControlPlane:
        t0 = time.monotonic()
        os.makedirs(self.dir, exist_ok=True)
        if self.bindir is None:
            self.bindir = ensure_binaries()
        self.timings["binaries"] = time.monotonic() - t0
        try:
            self._start(t0)
        except BaseException:
            self.stop()
            raise
        return self

    def _node_size(self) -> dict:
        """The simulated node's resources: room for ``max_pods`` Pods of 10m CPU and 16Mi each
        (the benches' size) beyond a floor of 32 CPUs and 256Gi; a fixed 32 CPUs held 3200."""
        cpu = max(32, -(-self.max_pods // 100))
        memory_gi = max(256, -(-self.max_pods // 64))
        return {"cpu": str(cpu), "memory": "%dGi" % memory_gi, "pods": str(self.max_pods)}

    def _start(self, t0: float) -> None:
        pki_dir = os.path.join(self.dir, "pki")
        os.makedirs(pki_dir, exist_ok=True)
        self.pki = make_pki(pki_dir)
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = "http://127.0.0.1:%d" % etcd_port
        self._spawn(
            "etcd",
            [
                "etcd",
                "--name=test",
                "--data-dir=%s" % os.path.join(self.dir, "etcd"),
                "--listen-client-urls=%s" % etcd_url,
                "--advertise-client-urls=%s" % etcd_url,
                "--listen-peer-urls=http://127.0.0.1:%d" % peer_port,
                "--initial-advertise-peer-urls=http://127.0.0.1:%d" % peer_port,
                "--initial-cluster=test=http://127.0.0.1:%d" % peer_port,
                "--listen-metrics-urls=",
                "--unsafe-no-fsync",  # a throwaway store: durability buys nothing here
                "--quota-backend-bytes=1073741824",
                "--log-level=warn",
            ],
        )
        self.readiness["etcd"] = lambda: (
            b'"health":"true"' in urllib.request.urlopen(etcd_url + "/health", timeout=2).read()
        )
        self._wait("etcd", self.readiness["etcd"])
        self.timings["etcd"] = time.monotonic() - t0

        self.server = "https://127.0.0.1:%d" % api_port
        self._spawn(
            "kube-apiserver",
            [
                "kube-apiserver",
                "--etcd-servers=%s" % etcd_url,
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",  # loopback may not be a Service endpoint
                "--secure-port=%d" % api_port,
                "--tls-cert-file=%s" % self.pki["serving_crt"],
                "--tls-private-key-file=%s" % self.pki["serving_key"],
                "--client-ca-file=%s" % self.pki["ca_crt"],
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file=%s" % self.pki["sa_pub"],
                "--service-account-signing-key-file=%s" % self.pki["sa_key"],
                "--service-cluster-ip-range=10.96.0.0/24",
                "--allow-privileged=false",
                "--cert-dir=%s" % os.path.join(self.dir, "apiserver-certs"),
                "--profiling=false",
                "--v=1",
            ],
        )
        self.readiness["kube-apiserver"] = lambda: self.raw("GET", "/readyz").strip() == b"ok"
        self._wait("kube-apiserver", self.readiness["kube-apiserver"])
        self.timings["kube-apiserver"] = time.monotonic() - t0

        with open(self.kubeconfig, "w") as handle:
            handle.write(
                kubeconfig_text(
                    self.server,
                    self.pki["ca_crt"],
                    {"client-certificate": self.pki["admin_crt"], "client-key": self.pki["admin_key"]},
                )
            )
        os.chmod(self.kubeconfig, 0o600)

        # The simulated node, created before kwok so kwok picks it up at once. No taint: any Pod
        # may schedule on it. Its podCIDR is a random loopback range, where kwok draws Pod IPs.
        block = 2 ** max(0, 24 - self.pod_cidr_prefix)  # /24s in the range, aligned
        third = random.randrange(0, 256, block) if block <= 256 else 0
        self.pod_cidr = "127.%d.%d.0/%d" % (random.randint(100, 250), third, self.pod_cidr_prefix)
        self.request(
            "POST",
            "/api/v1/nodes",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": NODE_NAME,
                    "annotations": {KWOK_ANNOTATION: "fake"},
                    "labels": {
                        "type": "kwok",
                        "kubernetes.io/hostname": NODE_NAME,
                        "kubernetes.io/os": "linux",
                    },
                },
                "spec": {"podCIDR": self.pod_cidr, "podCIDRs": [self.pod_cidr]},
                "status": {"allocatable": self._node_size(), "capacity": self._node_size()},
            },
        )

        admin = "--kubeconfig=%s" % self.kubeconfig
        self._spawn(
            "kube-controller-manager",
            [
                "kube-controller-manager",
                admin,
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                "--leader-elect=false",
                "--service-account-private-key-file=%s" % self.pki["sa_key"],
                "--root-ca-file=%s" % self.pki["ca_crt"],
                "--v=1",
            ],
        )
        self._spawn(
            "kube-scheduler",
            ["kube-scheduler", admin, "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false"],
        )
        self._spawn(
            "kwok",
            [
                "kwok",
                admin,
                "--config=%s" % os.path.join(self.bindir, "stages.yaml"),
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=%s=fake" % KWOK_ANNOTATION,
                "--node-ip=127.0.0.1",
                "--cidr=%s" % self.pod_cidr,
                "--node-lease-duration-seconds=40",
            ],
        )

        def node_ready() -> bool:
            node = self.request("GET", "/api/v1/nodes/" + NODE_NAME)
            conditions = (node.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        self._wait("kwok node", node_ready)
        self._wait(
            "default ServiceAccount (kube-controller-manager)",
            lambda: self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default"),
        )
        self.timings["ready"] = time.monotonic() - t0
        say(
            "control plane up in %.1fs (binaries %.1fs) at %s; kubeconfig %s"
            % (self.timings["ready"], self.timings["binaries"], self.server, self.kubeconfig)
        )

    def stop_component(self, name: str) -> None:
        """Stop one component (``etcd``, ``kube-apiserver``) by its pid, for a restart test."""
        stop_pid(self.procs[name].pid, self.procs[name])

    def start_component(self, name: str) -> None:
        """Start a component stopped by ``stop_component`` again with the same arguments (same
        ports, same data directory) and wait until it answers as at first start."""
        self._spawn(name, self.argv[name])
        probe = self.readiness.get(name)
        if probe is not None:
            self._wait(name + " (restarted)", probe)

    def stop(self) -> None:
        """End what we started, by pid, in reverse start order."""
        for name in reversed(list(self.procs)):
            stop_pid(self.procs[name].pid, self.procs[name])
        self.procs.clear()
        if os.path.isdir(self.dir):
            self._save_pids()


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the process that started us exits (a throwaway
    cluster needs no graceful shutdown, and kube-apiserver may hang in one once etcd is gone)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def stop_pid(pid: int, proc: subprocess.Popen | None = None, grace: float = 10.0) -> None:
    """SIGTERM, wait up to ``grace`` seconds, then SIGKILL; our own child is reaped."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        if proc is not None:
            if proc.poll() is not None:
                return
        else:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if proc is not None:
        proc.wait(5)


def _cli(argv: list) -> int:
    if len(argv) != 2 or argv[0] not in ("up", "down", "build"):
        print("usage: kube_cluster.py up DIR | down DIR | build -", file=sys.stderr)
        return 2
    command, directory = argv
    if command == "build":
        print(ensure_binaries())
        return 0
    if command == "up":
        plane = ControlPlane(directory).start()
        print("export KUBECONFIG=%s" % plane.kubeconfig)
        print("# stop with: %s %s down %s" % (sys.executable, __file__, directory))
        # Detach: the processes run in their own sessions; `down` stops them by the saved pids.
        for proc in plane.procs.values():
            proc.returncode = 0  # keep Popen's destructor from warning about running children
        return 0
    with open(os.path.join(directory, "pids.json")) as handle:
        pids = json.load(handle)
    for name in reversed(list(pids)):
        stop_pid(int(pids[name]))
    os.unlink(os.path.join(directory, "pids.json"))
    return 0


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
