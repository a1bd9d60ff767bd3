"""End-to-end harness: the shipped CRDs and RBAC on the test API server, and the controller as a
real process running under a ServiceAccount token bound only by the shipped RBAC.

``install_api`` applies controller/config/crd and controller/config/rbac (create, or replace
when present). ``ControllerProcess`` writes a providers file, starts
``python -m egress_proxies_controller`` with short intervals, and stops it by pid; ``kill()``
sends SIGKILL for the crash tests.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from cluster import kube_testlib
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from listen_ports import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "controller", "config")
CONTROLLER_NS = "egress-proxies-system"
SA = "egress-proxies-controller"
GROUP, VERSION, PLURAL = "crawl.example.com", "v1alpha1", "proxies"


def _docs(directory: str) -> list:
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*.yaml"))):
        if path.endswith("kustomization.yaml"):
            continue
        with open(path, encoding="utf-8") as handle:
            out.extend(d for d in yaml.safe_load_all(handle) if d)
    return out


def _apply(admin, doc: dict) -> None:
    kind = doc["kind"]
    meta = doc["metadata"]
    if kind == "CustomResourceDefinition":
        api = k8s.ApiextensionsV1Api(admin)
        try:
            api.create_custom_resource_definition(doc)
        except ApiException as exc:
            if exc.status != 409:
                raise
            current = api.read_custom_resource_definition(meta["name"])
            doc = dict(doc, metadata=dict(meta, resourceVersion=current.metadata.resource_version))
            api.replace_custom_resource_definition(meta["name"], doc)
        kube_testlib.wait_for(
            "CRD %s established" % meta["name"],
            lambda: any(
                c.type == "Established" and c.status == "True"
                for c in api.read_custom_resource_definition(meta["name"]).status.conditions or ()
            ),
        )
        return
    rbac, core = k8s.RbacAuthorizationV1Api(admin), k8s.CoreV1Api(admin)
    create = {
        "ServiceAccount": lambda: core.create_namespaced_service_account(meta["namespace"], doc),
        "ClusterRole": lambda: rbac.create_cluster_role(doc),
        "ClusterRoleBinding": lambda: rbac.create_cluster_role_binding(doc),
        "Role": lambda: rbac.create_namespaced_role(meta["namespace"], doc),
        "RoleBinding": lambda: rbac.create_namespaced_role_binding(meta["namespace"], doc),
        "Namespace": lambda: core.create_namespace(doc),
        "Secret": lambda: core.create_namespaced_secret(meta["namespace"], doc),
    }[kind]
    try:
        create()
    except ApiException as exc:
        if exc.status != 409:
            raise
        replace = {
            "ClusterRole": lambda: rbac.replace_cluster_role(meta["name"], doc),
            "ClusterRoleBinding": lambda: rbac.replace_cluster_role_binding(meta["name"], doc),
            "Role": lambda: rbac.replace_namespaced_role(meta["name"], meta["namespace"], doc),
            "RoleBinding": lambda: rbac.replace_namespaced_role_binding(meta["name"], meta["namespace"], doc),
        }.get(kind)
        if replace:
            replace()


def apply_all(admin, docs) -> None:
    """Create each of ``docs`` (a CRD, waiting until it is established, or replaced when it
    exists; a Namespace; RBAC; a Secret), as ``install_api`` does with the shipped ones."""
    for doc in docs:
        _apply(admin, doc)


def install_api(admin) -> None:
    """The CRDs, the controller's namespace and its RBAC, exactly as shipped."""
    for doc in _docs(os.path.join(CONFIG, "crd")):
        _apply(admin, doc)
    _apply(admin, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CONTROLLER_NS}})
    for doc in _docs(os.path.join(CONFIG, "rbac")):
        _apply(admin, doc)


def install_kubernetes_provider_rbac(admin) -> None:
    for doc in _docs(os.path.join(CONFIG, "rbac", "kubernetes-provider")):
        _apply(admin, doc)


def service_account_kubeconfig(admin, cluster, path: str, sa: str = SA, token: str = "") -> str:
    """A 0600 kubeconfig at ``path`` for the test API server with a token of ServiceAccount
    ``sa`` (``CONTROLLER_NS``), or ``token`` as given (a bogus one, for a refusal)."""
    token = (
        token
        or k8s.CoreV1Api(admin)
        .create_namespaced_service_account_token(sa, CONTROLLER_NS, {"spec": {"expirationSeconds": 3600}})
        .status.token
    )
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "test",
                "cluster": {"server": cluster.server, "certificate-authority": cluster.pki["ca_crt"]},
            }
        ],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": "controller", "context": {"cluster": "test", "user": sa}}],
        "current-context": "controller",
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(doc, handle)
    return path


@pytest.fixture(scope="session")
def controller_api(kube_admin):
    """The test API server with the shipped CRDs and RBAC installed (import into a test module)."""
    install_api(kube_admin)
    install_kubernetes_provider_rbac(kube_admin)
    return kube_admin


@functools.cache
def controller_knows(code: str, flag: str) -> bool:
    """Whether the controller package of the tree ``code`` has the command-line flag ``flag``
    (the upgrade test starts a release's controller, which may predate a flag)."""
    if code == ROOT:
        return True
    out = subprocess.run(
        [sys.executable, "-m", "egress_proxies_controller", "--help"],
        env=dict(os.environ, PYTHONPATH=os.path.join(code, "controller")),
        capture_output=True,
        text=True,
        check=True,
    )
    return flag in out.stdout.split()


class ControllerProcess:
    def __init__(self, workdir: str, kubeconfig: str, providers: dict, namespace: str, lease_id: str):
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.providers_file = os.path.join(workdir, "providers.yaml")
        self.namespace = namespace
        self.lease_id = lease_id
        self.health_port = free_port()
        self.metrics_port = free_port()
        # Plain HTTP metrics (--metrics-insecure) unless a test sets a certificate directory
        # (tls.crt, tls.key) and the bearer token metrics() sends (telemetry/metrics_auth.py).
        self.metrics_cert_dir = None
        self.metrics_token = None
        self.proc = None
        self.log_path = os.path.join(workdir, "controller.log")
        self.write_providers(providers)

    def write_providers(self, providers: dict) -> None:
        tmp = self.providers_file + ".tmp"
        with open(tmp, "w") as handle:
            yaml.safe_dump(providers, handle)
        os.replace(tmp, self.providers_file)

    def start(
        self,
        fault: str = "",
        extra_args=(),
        *,
        code: str = ROOT,
        collections: str = "",
        leader_elect: bool = True,
    ) -> None:
        """``code``: the tree whose controller package runs (the upgrade test starts a release's);
        ``collections``: the ANSIBLE_COLLECTIONS_PATH its modules come from (this tree's venv's);
        ``leader_elect``: False runs it without ``--leader-elect`` (alone, acting at once)."""
        if self.proc is not None and self.proc.poll() is None:
            # A second one would find the health and metrics ports taken and the first would go
            # on holding the Lease, unseen: a test that meant to restart must stop (or kill) first.
            raise AssertionError(
                "controller pid %d is still running: stop it before starting another" % self.proc.pid
            )
        # Everything the controller can write is under workdir: its home (ansible's ~/.ansible),
        # its TMPDIR and its work dir, so a leak test can search all of it.
        home, tmp = os.path.join(self.workdir, "home"), os.path.join(self.workdir, "tmp")
        os.makedirs(home, mode=0o700, exist_ok=True)
        os.makedirs(tmp, mode=0o700, exist_ok=True)
        env = dict(
            os.environ,
            PYTHONPATH=os.path.join(code, "controller"),
            ANSIBLE_COLLECTIONS_PATH=collections or os.path.join(ROOT, ".venv", "collections"),
            HOME=home,
            TMPDIR=tmp,
        )
        env.pop("EGRESS_PROXIES_CONTROLLER_FAULT", None)
        if fault:
            env["EGRESS_PROXIES_CONTROLLER_FAULT"] = fault
        argv = [
            sys.executable,
            "-m",
            "egress_proxies_controller",
            "--kubeconfig",
            self.kubeconfig,
            "--providers-file",
            self.providers_file,
            "--namespace",
            self.namespace,
            "--work-dir",
            os.path.join(self.workdir, "runner"),
            "--health-addr",
            "127.0.0.1:%d" % self.health_port,
            "--metrics-addr",
            "127.0.0.1:%d" % self.metrics_port,
            *(
                ["--metrics-cert-dir", self.metrics_cert_dir]
                if self.metrics_cert_dir is not None
                # A release from before authenticated metrics serves plain HTTP and has no flag.
                else ["--metrics-insecure"]
                if controller_knows(code, "--metrics-insecure")
                else []
            ),
            *(
                [
                    "--leader-elect",
                    "--leader-election-namespace",
                    CONTROLLER_NS,
                    "--leader-election-id",
                    self.lease_id,
                ]
                if leader_elect
                else []
            ),
            "--provisioning-poll",
            "1",
            "--deletion-poll",
            "1",
            "--running-poll",
            "3",
            "--quota-retry",
            "3",
            "--backoff-base",
            "0.5",
            "--backoff-max",
            "5",
            "--log-format",
            "text",
            "--log-level",
            "INFO",
            # The loops run only where a test asks for them (extra_args override these).
            "--gc-interval",
            "0",
            "--health-check-interval",
            "0",
            "--probe-interval",
            "1",
            *extra_args,
        ]
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed at stop
        self.proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=self.workdir
        )
        self._log = log

    def wait_ready(self, timeout: float = 60) -> None:
        import urllib.request

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError("controller exited %s:\n%s" % (self.proc.returncode, self.tail()))
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % self.health_port, timeout=1) as r:
                    return r.status == 200
            except OSError:
                return False

        kube_testlib.wait_for("controller ready", ready, timeout=timeout)

    def metrics(self, token: str | None = None) -> str:
        """The /metrics page: plain HTTP, or HTTPS with ``token`` (default ``metrics_token``),
        the server's certificate checked against the one in ``metrics_cert_dir``."""
        import urllib.request

        if self.metrics_cert_dir is None:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port, timeout=5) as r:
                return r.read().decode()
        return self.metrics_request(token or self.metrics_token)[1]

    def metrics_request(self, token: str | None) -> tuple[int, str]:
        """(status, body) of an HTTPS GET of /metrics, with ``token`` as bearer when given."""
        import ssl
        import urllib.error
        import urllib.request

        context = ssl.create_default_context(cafile=os.path.join(self.metrics_cert_dir, "tls.crt"))
        context.check_hostname = False  # the certificate names the Service; the CA pins it
        request = urllib.request.Request("https://127.0.0.1:%d/metrics" % self.metrics_port)
        if token:
            request.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._log.close()

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            raise AssertionError("controller did not stop on SIGTERM within 60 s:\n" + self.tail()) from None
        finally:
            self._log.close()

    def tail(self, lines: int = 60) -> str:
        with open(self.log_path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])

    def log_lines(self, containing: str) -> list:
        """The lines of the controller's log that contain ``containing``, in order."""
        with open(self.log_path, errors="replace") as handle:
            return [line for line in handle if containing in line]


def proxy_body(name: str, spec: dict) -> dict:
    return {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "Proxy",
        "metadata": {"name": name},
        "spec": spec,
    }


def condition(obj: dict, cond_type: str) -> dict:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == cond_type:
            return cond
    return {}


def proxies(custom, namespace: str) -> list:
    """Every Proxy of ``namespace``, as the API server lists them."""
    return custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]


def is_ready(obj: dict) -> bool:
    return condition(obj, "Ready").get("status") == "True"


def wait_proxy(custom, namespace: str, name: str, predicate, what: str, timeout: float = 90, proc=None):
    def probe():
        if proc is not None and proc.proc.poll() is not None:
            raise AssertionError("controller exited %s:\n%s" % (proc.proc.returncode, proc.tail()))
        try:
            obj = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        except ApiException as exc:
            if exc.status == 404:
                return "gone" if predicate("gone") else None
            raise
        return obj if predicate(obj) else None

    try:
        return kube_testlib.wait_for(what, probe, timeout=timeout, interval=0.3)
    except Exception as exc:
        extra = ("\n--- controller log ---\n" + proc.tail()) if proc is not None else ""
        raise AssertionError("%s%s" % (exc, extra)) from None


def wait_condition(custom, namespace: str, name: str, cond_type: str, timeout: float = 90, proc=None):
    """Wait until the Proxy's ``cond_type`` condition is True; returns the object."""
    return wait_proxy(
        custom,
        namespace,
        name,
        lambda o: o != "gone" and condition(o, cond_type).get("status") == "True",
        "%s %s" % (name, cond_type),
        timeout,
        proc,
    )


def settle(seconds: float) -> None:
    time.sleep(seconds)
