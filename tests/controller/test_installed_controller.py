"""The controller as the image installs it and the Deployment runs it (issue 29, point 1).

controller/install.sh (the script the Containerfile runs) installs into a scratch prefix, which
is then mounted read-only at the image's paths (/opt/venv and /usr/share/ansible/collections,
read from the Containerfile's final-stage COPY lines). The manifests go to the test control plane
with ``kubectl apply -k --server-side`` of an overlay as docs/controller.md tells users to write
one (the install plus the kubernetes provider's rights, their providers file replacing the
ConfigMap's). Then the controller runs as the applied Deployment says: its command, args and env
(with the image's ENV under them), its uid, gid and fsGroup, no capabilities, a read-only root,
each volume where it mounts it (the ConfigMap's providers file as the API server holds it,
emptyDirs for /tmp and HOME), the ServiceAccount's token where in-cluster configuration reads it,
in a network namespace of its own (tests/controller/pod_sandbox.py). It answers the readiness
probe, and a Proxy on the local provider and one on the kubernetes provider become Ready.

The install is cheap when repeated: the locked files are downloaded once per lock into
/var/cache/egress-proxies/controller-install (pip's wheel cache keeps libvirt-python's build).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
import yaml
from cluster import kube_cluster as kube_cluster_module
from cluster import kube_testlib
from kubernetes import client as k8s

from . import e2e_lib, kustomize_render, pod_sandbox

pytestmark = [pytest.mark.squid]

ROOT = e2e_lib.ROOT
CONTAINERFILE = os.path.join(ROOT, "controller", "Containerfile")
INSTALL = os.path.join(ROOT, "controller", "install.sh")
CACHE = os.environ.get("EGRESS_INSTALL_CACHE", "/var/cache/egress-proxies/controller-install")
NAMESPACE = e2e_lib.CONTROLLER_NS
# The base image's own PATH (python:3.11-slim-bookworm), which the Containerfile's ENV extends.
BASE_PATH = "/usr/local/bin:/usr/local/sbin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
# Debian's interpreter, as the image's is a system one (the test's may live under /root, 0700).
SYSTEM_PYTHON = "/usr/bin/python3"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# New mount, PID (tini is PID 1, as in the container) and network namespaces.
SANDBOX = [
    "unshare",
    "--mount",
    "--pid",
    "--net",
    "--fork",
    "--kill-child",
    "--mount-proc",
    "--propagation",
    "private",
    "--",
]
KUBE_PROXY_PORT = 3129  # the kubernetes Proxy's port: pod_sandbox answers connects on it


def final_stage() -> dict:
    """ENV (in order, ``${VAR}`` expanded), WORKDIR and the paths copied from the build stage,
    of the Containerfile's last stage."""
    with open(CONTAINERFILE, encoding="utf-8") as handle:
        text = handle.read().replace("\\\n", " ")
    stage = re.split(r"^FROM ", text, flags=re.M)[-1]
    env, copied, workdir = {"PATH": BASE_PATH}, [], "/"
    for line in stage.splitlines():
        if line.startswith("ENV "):
            for name, value in re.findall(r"(\w+)=(\S+)", line[4:]):
                env[name] = re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], value)
        elif line.startswith("WORKDIR "):
            workdir = line.split()[1]
        elif line.startswith("COPY --from=build "):
            source, target = line.split()[2:4]
            assert source == target, line
            copied.append(target)
    assert copied, "no COPY --from=build in the final stage"
    return {"env": env, "copied": copied, "workdir": workdir}


def _files_key() -> str:
    digest = hashlib.sha256()
    for rel in ("controller/requirements.lock", "hack/collections.txt"):
        with open(os.path.join(ROOT, rel), "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:16]


def download_cache() -> str:
    """The lock's files and the pinned ``ansible`` wheel, downloaded (hash-checked) once per lock."""
    directory = os.path.join(CACHE, _files_key())
    if os.path.isdir(directory):
        return directory
    os.makedirs(CACHE, exist_ok=True)
    staging = directory + ".%d" % os.getpid()
    shutil.rmtree(staging, ignore_errors=True)
    with open(os.path.join(ROOT, "hack", "collections.txt"), encoding="utf-8") as handle:
        ansible = [line.split("#")[0].strip() for line in handle if line.startswith("ansible==")]
    os.makedirs(staging)
    with open(os.path.join(staging, "ansible.txt"), "w", encoding="utf-8") as handle:
        handle.write(ansible[0] + "\n")
    pip = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
    pip += ["--require-hashes", "--dest", staging]
    subprocess.run([*pip, "-r", os.path.join(ROOT, "controller", "requirements.lock")], check=True)
    subprocess.run([*pip, "--only-binary=:all:", "-r", os.path.join(staging, "ansible.txt")], check=True)
    try:
        os.rename(staging, directory)
    except OSError:  # another session published it first
        shutil.rmtree(staging, ignore_errors=True)
    return directory


def mount_points(paths) -> None:
    """Empty directories where the machine has none yet, to mount over in a private namespace
    (as tests/contract/libvirt_namespace.sh does); nothing outside that namespace sees the mounts."""
    for path in paths:
        os.makedirs(path, exist_ok=True)


def in_mount_namespace(mounts: list, argv: list, env: dict) -> subprocess.CompletedProcess:
    """``argv`` in a private mount namespace with ``mounts`` (pod_sandbox's form) in place."""
    script = "".join("%s && " % shlex.join(pod_sandbox.mount_command(m)) for m in mounts)
    return subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            script + 'exec "$@"',
            "sh",
            *argv,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def python_layer(venv: str, env: dict) -> str:
    """``install.sh python`` into a directory seen at ``venv``, once per lock, step and Python:
    its output depends on nothing else. The venv (340 MB, about 40 CPU-seconds of pip) is
    the read-only lower layer of each test's install (an overlay mount), never changed."""
    digest = hashlib.sha256()
    with open(os.path.join(ROOT, "controller", "requirements.lock"), "rb") as handle:
        digest.update(handle.read())
    with open(INSTALL, encoding="utf-8") as handle:
        script = handle.read()
    # The step's own lines (its function and the pip wrapper): a comment elsewhere keeps the key.
    for pattern in (r"(?ms)^python_packages\(\) \{.*?^\}$", r"(?m)^pip_\(\).*$"):
        (lines,) = re.findall(pattern, script)
        digest.update(lines.encode())
    digest.update(subprocess.run([SYSTEM_PYTHON, "-VV"], capture_output=True, check=True).stdout)
    directory = os.path.join(CACHE, "venv-" + digest.hexdigest()[:16])
    if os.path.isdir(directory):
        return directory
    staging = directory + ".%d" % os.getpid()
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    out = in_mount_namespace([[staging, venv, False]], [INSTALL, "python", ROOT], env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    try:
        os.rename(staging, directory)
    except OSError:  # another session published it first
        shutil.rmtree(staging, ignore_errors=True)
    return directory


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """controller/install.sh into a scratch prefix seen at the image's paths (its ``python``
    step cached, see python_layer; ``collections`` and ``controller`` run every time); returns
    the mounts that show the install at those paths, read-only (pod_sandbox's form)."""
    stage = final_stage()
    venv, collections = "/opt/venv", stage["env"]["ANSIBLE_COLLECTIONS_PATH"]
    assert sorted(stage["copied"]) == sorted([venv, collections]), stage["copied"]
    mount_points(stage["copied"])
    prefix = tmp_path_factory.mktemp("installed")
    upper, work, tree = (str(prefix / name) for name in ("venv-upper", "venv-work", "collections"))
    for directory in (upper, work, tree):
        os.makedirs(directory)
    env = dict(os.environ, PYTHON=SYSTEM_PYTHON, PIP_FIND_LINKS=download_cache(), PIP_NO_INDEX="1")
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "ANSIBLE_COLLECTIONS_PATH"):
        env.pop(name, None)
    started = time.monotonic()
    lower = python_layer(venv, env)
    print("install.sh python (cached per lock and script): %.1fs" % (time.monotonic() - started))
    started = time.monotonic()
    writable = [[{"lower": lower, "upper": upper, "work": work}, venv, False], [tree, collections, False]]
    for step in ("collections", "controller"):
        out = in_mount_namespace(writable, [INSTALL, step, ROOT], env)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    print("install.sh collections, controller: %.1fs" % (time.monotonic() - started))
    # What the image's ENV points at is in the install, at the Containerfile's paths.
    assert os.path.isfile(os.path.join(tree, "ansible_collections", "kubernetes", "core", "MANIFEST.json"))
    assert os.path.isfile(os.path.join(lower, "bin", "python"))
    assert any(
        name.startswith("egress_proxies_controller-")
        for name in os.listdir(os.path.join(upper, "lib", "python3.11", "site-packages"))
    )
    return [[{"lower": [upper, lower]}, venv, True], [tree, collections, True]]


def kubectl() -> str:
    """kubectl of the control plane's release, built once per machine (tests/cluster/build.sh
    kubectl; `make test` builds it in the background), not whichever one a machine may have."""
    out = subprocess.run(
        [os.path.join(ROOT, "tests", "cluster", "build.sh"), "kubectl"],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert out.returncode == 0, "tests/cluster/build.sh kubectl failed; see its output above"
    return os.path.join(out.stdout.strip().splitlines()[-1], "kubectl")


def write_overlay(directory, providers: dict) -> str:
    """The user's overlay of docs/controller.md ("Remote install"): the install with the kubernetes
    provider's rights, their providers file replacing the ConfigMap's."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "providers.yaml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(providers, handle)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        # kustomize takes only relative paths (a user's overlay names the tree's URL instead).
        "resources": [os.path.relpath(os.path.join(e2e_lib.CONFIG, "with-kubernetes-provider"), directory)],
        "configMapGenerator": [
            {
                "name": "egress-proxies-providers",
                "namespace": NAMESPACE,
                "behavior": "replace",
                "options": {"disableNameSuffixHash": True},
                "files": ["providers.yaml"],
            }
        ],
    }
    with open(os.path.join(directory, "kustomization.yaml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(kustomization, handle)
    return str(directory)


def resolve_env(container: dict, namespace: str) -> dict:
    """The container's env as the kubelet resolves it (the fields the Deployment uses)."""
    out = {}
    for var in container.get("env", []):
        if "value" in var:
            out[var["name"]] = var["value"]
        else:
            field = var["valueFrom"]["fieldRef"]["fieldPath"]
            assert field == "metadata.namespace", "resolve %s here too" % field
            out[var["name"]] = namespace
    return out


class Pod:
    """The Deployment's Pod, materialised on this machine (volumes, token, sandbox process)."""

    def __init__(self, admin, cluster, deployment: dict, installed: list, workdir):
        self.admin = admin
        self.dir = str(workdir)
        template = deployment["spec"]["template"]["spec"]
        (self.container,) = template["containers"]
        context = dict(template.get("securityContext", {}), **self.container.get("securityContext", {}))
        fs_group = template.get("securityContext", {}).get("fsGroup")
        self.user = {"uid": context["runAsUser"], "gid": context["runAsGroup"], "groups": [fs_group]}
        assert context["readOnlyRootFilesystem"] is True and context["capabilities"]["drop"] == ["ALL"]
        self.namespace = deployment["metadata"]["namespace"]
        stage = final_stage()
        self.mounts = [list(m) for m in installed]
        volumes = {v["name"]: v for v in template["volumes"]}
        for mount in self.container["volumeMounts"]:
            source = self._volume(volumes[mount["name"]], fs_group)
            self.mounts.append([source, mount["mountPath"], bool(mount.get("readOnly"))])
        self.mounts.append(
            [self._service_account(template["serviceAccountName"], cluster), SERVICE_ACCOUNT_DIR, True]
        )
        mount_points(m[1] for m in self.mounts)
        api_port = int(cluster.server.rsplit(":", 1)[1])
        ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        self.readiness = self.container["readinessProbe"]["httpGet"]
        self.env = dict(
            stage["env"],
            # What the kubelet adds: the API server's address for in-cluster configuration.
            KUBERNETES_SERVICE_HOST="127.0.0.1",
            KUBERNETES_SERVICE_PORT=str(api_port),
            HOSTNAME="egress-proxies-controller-test",
        )
        self.env.update(resolve_env(self.container, self.namespace))
        self.api_socket = os.path.join(self.dir, "api.sock")
        self.health_socket = os.path.join(self.dir, "health.sock")
        self.spec = {
            "mounts": self.mounts,
            "user": self.user,
            "env": self.env,
            "argv": self.container["command"] + self.container["args"],
            "workdir": stage["workdir"],
            "api_port": api_port,
            "api_socket": self.api_socket,
            "health_port": ports[self.readiness["port"]],
            "health_socket": self.health_socket,
            "pod_port": KUBE_PROXY_PORT,
        }
        self.api_forward = pod_sandbox.forward_unix_to_tcp(self.api_socket, "127.0.0.1", api_port)
        self.proc = None
        self.log_path = os.path.join(self.dir, "controller.log")

    def _volume(self, volume: dict, fs_group: int) -> str:
        directory = os.path.join(self.dir, "volumes", volume["name"])
        os.makedirs(directory)
        os.chown(directory, 0, fs_group)
        if "emptyDir" in volume:
            os.chmod(directory, 0o2777)  # what the kubelet gives an emptyDir with an fsGroup
            return directory
        os.chmod(directory, 0o2755)
        projected = volume["projected"]
        for source in projected["sources"]:
            ((kind, ref),) = source.items()
            read = {
                "configMap": lambda n: (
                    k8s.CoreV1Api(self.admin).read_namespaced_config_map(n, self.namespace).data
                ),
                "secret": lambda n: k8s.CoreV1Api(self.admin).read_namespaced_secret(n, self.namespace).data,
            }[kind]
            try:
                data = read(ref["name"])
            except k8s.ApiException as exc:
                if exc.status == 404 and ref.get("optional"):
                    continue
                raise
            for item in ref["items"]:
                path = os.path.join(directory, item["path"])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(data[item["key"]])
                os.chown(path, 0, fs_group)
                os.chmod(path, item.get("mode", projected.get("defaultMode", 0o644)))
        return directory

    def _service_account(self, name: str, cluster) -> str:
        directory = os.path.join(self.dir, "serviceaccount")
        os.makedirs(directory)
        token = (
            k8s.CoreV1Api(self.admin)
            .create_namespaced_service_account_token(
                name, self.namespace, {"spec": {"expirationSeconds": 3600}}
            )
            .status.token
        )
        shutil.copy(cluster.pki["ca_crt"], os.path.join(directory, "ca.crt"))
        for file_name, text in (("token", token), ("namespace", self.namespace)):
            with open(os.path.join(directory, file_name), "w", encoding="utf-8") as handle:
                handle.write(text)
        for file_name in os.listdir(directory):
            os.chmod(os.path.join(directory, file_name), 0o644)
        return directory

    def start(self) -> None:
        spec_file = os.path.join(self.dir, "sandbox.json")
        with open(spec_file, "w", encoding="utf-8") as handle:
            json.dump(self.spec, handle)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed at stop
        self._log = log
        self.proc = subprocess.Popen(
            [*SANDBOX, sys.executable, pod_sandbox.__file__, spec_file],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # A test process that dies takes the Pod along (--kill-child ends its namespace).
            preexec_fn=kube_cluster_module._die_with_parent,
        )

    def ready(self) -> bool:
        """The readinessProbe's GET, through the sandbox's Unix socket to the health port."""
        if self.proc.poll() is not None:
            raise AssertionError("the Pod's process exited %s:\n%s" % (self.proc.returncode, self.tail()))
        conn = http.client.HTTPConnection("localhost", timeout=5)
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(5)
            sock.connect(self.health_socket)
            conn.sock = sock
            conn.request("GET", self.readiness["path"])
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def init_pid(self) -> int:
        """The host pid of the sandbox's PID 1 (tini), unshare's one child."""
        with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as handle:
            (pid,) = handle.read().split()
        return int(pid)

    def processes(self) -> list:
        """(pid, uid, gid, groups, name) of every process in the sandbox."""
        out, todo = [], [self.init_pid()]
        while todo:
            pid = todo.pop()
            try:
                with open("/proc/%d/status" % pid) as handle:
                    status = dict(
                        line.split(":\t", 1) for line in handle.read().splitlines() if ":\t" in line
                    )
                with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
                    todo += [int(c) for c in handle.read().split()]
            except OSError:
                continue
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                if pod_sandbox.__file__.encode() in handle.read():
                    continue  # the network's stand-ins (root, not the container's)
            uid, gid = int(status["Uid"].split()[1]), int(status["Gid"].split()[1])
            out.append((pid, uid, gid, status["Groups"].split(), status["Name"].strip()))
        return out

    def stop(self) -> int:
        """SIGTERM to tini, as the kubelet stops a container; tini's exit status."""
        try:
            os.kill(self.init_pid(), signal.SIGTERM)
            return self.proc.wait(120)
        finally:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)  # --kill-child takes the namespace along
                self.proc.wait(10)
            self._log.close()
            self.api_forward.close()

    def tail(self, lines: int = 80) -> str:
        with open(self.log_path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])


def test_the_installed_controller_runs_as_the_deployment_says(installed, kube_cluster, kube_admin, tmp_path):
    # The providers file a user puts into their overlay: the kubernetes provider of
    # with-kubernetes-provider's ConfigMap (in-cluster configuration, the Proxy's namespace) plus
    # a local one at its defaults (stateDir under HOME's volume, 127.77.0.0/16 in the Pod's own
    # network namespace).
    (configmap,) = [
        o
        for o in kustomize_render.render(os.path.join(e2e_lib.CONFIG, "with-kubernetes-provider"))
        if o["kind"] == "ConfigMap"
    ]
    providers = yaml.safe_load(configmap["data"]["providers.yaml"])
    providers["installation"] = "installed-%08x" % random.SystemRandom().getrandbits(32)
    providers["providers"].append({"name": "local", "type": "local"})
    overlay = write_overlay(tmp_path / "overlay", providers)
    # --force-conflicts: the session's control plane may hold these objects already, applied by
    # another test under its own field manager with other values (the controller role's test sets
    # another image); a user re-installing over a role-made install needs it too.
    apply = ["apply", "--server-side", "--force-conflicts", "-k", overlay]
    applied = subprocess.run(
        [kubectl(), "--kubeconfig", kube_cluster.kubeconfig, *apply],
        capture_output=True,
        text=True,
        check=False,
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "deployment.apps/egress-proxies-controller serverside-applied" in applied.stdout, applied.stdout
    deployment = k8s.ApiClient().sanitize_for_serialization(
        k8s.AppsV1Api(kube_admin).read_namespaced_deployment("egress-proxies-controller", NAMESPACE)
    )
    pod = Pod(kube_admin, kube_cluster, deployment, installed, tmp_path / "pod")
    namespace = kube_testlib.create_namespace(kube_admin)
    custom = k8s.CustomObjectsApi(kube_admin)
    started, cpu = time.monotonic(), os.times()
    pod.start()
    try:
        kube_testlib.wait_for("the readiness probe", pod.ready, timeout=120, interval=0.5)
        print("ready after %.1fs" % (time.monotonic() - started))
        for name, spec in (
            ("local", {"provider": "local"}),
            ("kube", {"provider": "kubernetes", "port": KUBE_PROXY_PORT}),
        ):
            custom.create_namespaced_custom_object(
                e2e_lib.GROUP, e2e_lib.VERSION, namespace, e2e_lib.PLURAL, e2e_lib.proxy_body(name, spec)
            )
        ready = {}
        for name in ("local", "kube"):
            try:
                ready[name] = e2e_lib.wait_condition(custom, namespace, name, "Ready", timeout=180)
            except AssertionError as exc:
                raise AssertionError("%s\n--- controller ---\n%s" % (exc, pod.tail())) from None
        print("both Proxies Ready after %.1fs" % (time.monotonic() - started))
        assert ready["local"]["status"]["ip"].startswith("127.77.")
        pod_namespace, pod_name = ready["kube"]["status"]["providerID"].split("/")
        kube_pod = k8s.CoreV1Api(kube_admin).read_namespaced_pod(pod_name, pod_namespace)
        assert kube_pod.status.pod_ip == ready["kube"]["status"]["ip"]
        # Every process of the Pod (tini, the controller, ansible's, Squid) runs as the
        # Deployment's user; Squid is among them (the local provider's instance).
        processes = pod.processes()
        assert processes[0][4] == "tini"
        assert {(uid, gid) for _pid, uid, gid, _groups, _name in processes} == {(65532, 65532)}
        assert {tuple(groups) for *_rest, groups, _name in processes} == {("65532",)}
        assert "squid" in {name for *_rest, name in processes}
        for name in ("local", "kube"):
            custom.delete_namespaced_custom_object(
                e2e_lib.GROUP, e2e_lib.VERSION, namespace, e2e_lib.PLURAL, name
            )
        for name in ("local", "kube"):
            e2e_lib.wait_proxy(custom, namespace, name, lambda o: o == "gone", "%s deleted" % name, 120)
        assert pod.stop() == 0, pod.tail()
        spent = os.times()
        print(
            "the Pod ran %.1fs, %.1f CPU-s"
            % (
                time.monotonic() - started,
                spent.children_user + spent.children_system - cpu.children_user - cpu.children_system,
            )
        )
    finally:
        if pod.proc.poll() is None:
            pod.stop()
        kube_testlib.delete_namespace(kube_admin, namespace)
    # Nothing was written into the installed tree (mounted read-only: a write would have failed
    # the run); the controller's files went to the volumes.
    assert os.listdir(os.path.join(pod.dir, "volumes", "private"))
