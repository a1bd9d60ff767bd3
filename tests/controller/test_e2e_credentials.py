"""A controller whose token the API server refuses (401) says so once and exits (issue 40 §6).

On the real test API server, with ``--leader-elect``: a bogus bearer token from the start (a
standby asking for the Lease), and a ServiceAccount token revoked mid-run (the leader; its
ServiceAccount deleted, which the API server checks on every request). Before, /readyz and
/healthz said 200 ok forever and a multi-line exception dump was logged every 2 s; now the
refusal is one log line saying what to do, /readyz fails, and the process exits 1 as it does
when the API server cannot be reached (a leader: at once, as on a lost Lease).
"""

from __future__ import annotations

import os
import random
import subprocess
import time

import pytest
from cluster import kube_testlib
from contract.local_backend import random_loopback_range
from kubernetes import client as k8s

from . import e2e_lib

pytestmark = [pytest.mark.squid]
controller_api = e2e_lib.controller_api
REFUSED = "the API server refused this controller's credentials (401 Unauthorized"
EXIT_WITHIN = 30.0  # seconds: the first Lease request, or the next renewal (every 2 s)


def _providers(tmp_path) -> dict:
    return {
        "installation": "cred-%08x" % random.SystemRandom().getrandbits(32),
        "providers": [
            {
                "name": "local",
                "type": "local",
                "local": {"stateDir": str(tmp_path / "state"), "addressRange": random_loopback_range()},
            }
        ],
    }


def _exits(controller) -> int:
    try:
        return controller.proc.wait(EXIT_WITHIN)
    except subprocess.TimeoutExpired:
        raise AssertionError(
            "the controller still runs %.0fs after its credentials were refused:\n%s"
            % (EXIT_WITHIN, controller.tail())
        ) from None


def _said_once(controller) -> str:
    with open(controller.log_path, errors="replace") as handle:
        log = handle.read()
    assert log.count(REFUSED) == 1, log
    line = next(line for line in log.splitlines() if REFUSED in line)
    assert "give it a valid token" in line and "exiting" in line, line
    # No exception dump: neither a traceback nor the client's multi-line HTTP response.
    assert "Traceback" not in log and "HTTP response headers" not in log, log
    return log


@pytest.fixture
def controller(controller_api, kube_namespace, tmp_path):
    made = []

    def start(kubeconfig: str, leader_elect: bool = True):
        os.makedirs(tmp_path / "controller", exist_ok=True)
        proc = e2e_lib.ControllerProcess(
            str(tmp_path / "controller"),
            kubeconfig,
            _providers(tmp_path),
            kube_namespace,
            "lease-" + kube_namespace,
        )
        proc.start(leader_elect=leader_elect)
        made.append(proc)
        return proc

    yield start
    for proc in made:
        if proc.proc.poll() is None:
            proc.kill()


def test_a_bogus_token_from_the_start_is_said_once_and_the_controller_exits(
    controller, controller_api, kube_cluster, tmp_path
):
    kubeconfig = e2e_lib.service_account_kubeconfig(
        controller_api, kube_cluster, str(tmp_path / "bogus.kubeconfig"), token="not-a-token-%d" % os.getpid()
    )
    proc = controller(kubeconfig)
    assert _exits(proc) == 1, proc.tail()
    _said_once(proc)


@pytest.fixture
def revocable_account(controller_api):
    """A ServiceAccount of its own (bound to the controller's roles) whose deletion revokes its
    tokens, leaving the shared one alone."""
    name = "ep-revoked-%08x" % random.SystemRandom().getrandbits(32)
    core, rbac = k8s.CoreV1Api(controller_api), k8s.RbacAuthorizationV1Api(controller_api)
    core.create_namespaced_service_account(e2e_lib.CONTROLLER_NS, {"metadata": {"name": name}})
    bindings = []
    for binding in rbac.list_cluster_role_binding().items:
        if any(s.name == e2e_lib.SA for s in binding.subjects or ()):
            bindings.append(("cluster", binding.role_ref))
    for binding in rbac.list_namespaced_role_binding(e2e_lib.CONTROLLER_NS).items:
        if any(s.name == e2e_lib.SA for s in binding.subjects or ()):
            bindings.append(("namespaced", binding.role_ref))
    assert bindings, "the shipped RBAC binds nothing to %s" % e2e_lib.SA
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": e2e_lib.CONTROLLER_NS}]
    made = []
    for index, (scope, ref) in enumerate(bindings):
        body = {
            "metadata": {"name": "%s-%d" % (name, index)},
            "roleRef": {"apiGroup": ref.api_group, "kind": ref.kind, "name": ref.name},
            "subjects": subject,
        }
        if scope == "cluster":
            rbac.create_cluster_role_binding(body)
        else:
            rbac.create_namespaced_role_binding(e2e_lib.CONTROLLER_NS, body)
        made.append((scope, body["metadata"]["name"]))
    try:
        yield name
    finally:
        for scope, binding in made:
            if scope == "cluster":
                rbac.delete_cluster_role_binding(binding)
            else:
                rbac.delete_namespaced_role_binding(binding, e2e_lib.CONTROLLER_NS)
        try:
            core.delete_namespaced_service_account(name, e2e_lib.CONTROLLER_NS)
        except k8s.exceptions.ApiException as exc:
            if exc.status != 404:
                raise


def test_a_token_revoked_mid_run_is_said_once_and_the_leader_exits(
    controller, controller_api, kube_cluster, revocable_account, tmp_path
):
    kubeconfig = e2e_lib.service_account_kubeconfig(
        controller_api, kube_cluster, str(tmp_path / "sa.kubeconfig"), sa=revocable_account
    )
    proc = controller(kubeconfig)
    proc.wait_ready()  # a standby is ready at once: wait until it leads
    kube_testlib.wait_for(
        "the lease held", lambda: "\negress_proxies_leader 1.0\n" in proc.metrics(), timeout=60
    )
    k8s.CoreV1Api(controller_api).delete_namespaced_service_account(revocable_account, e2e_lib.CONTROLLER_NS)
    assert _exits(proc) == 1, proc.tail()
    _said_once(proc)


def test_without_leader_election_a_revoked_token_stops_the_controller_with_exit_1(
    controller, controller_api, kube_cluster, kube_namespace, revocable_account, tmp_path
):
    """Without a Lease to lose, the refusal stops the controller as SIGTERM does, exit 1."""
    kubeconfig = e2e_lib.service_account_kubeconfig(
        controller_api, kube_cluster, str(tmp_path / "sa.kubeconfig"), sa=revocable_account
    )
    proc = controller(kubeconfig, leader_elect=False)
    proc.wait_ready()
    k8s.CoreV1Api(controller_api).delete_namespaced_service_account(revocable_account, e2e_lib.CONTROLLER_NS)
    # Idle, it sends nothing new, and the API server trusts a token it checked for a few seconds:
    # Proxies created now (every 2 s) reach it through the open watch, and a write of its own
    # about one (the finalizer, the latch of their unknown provider: no instance is made) meets
    # the 401.
    custom, made = k8s.CustomObjectsApi(controller_api), []
    try:
        deadline = time.monotonic() + EXIT_WITHIN
        while proc.proc.poll() is None and time.monotonic() < deadline:
            name = "p-%d" % len(made)
            body = e2e_lib.proxy_body(name, {"provider": "nowhere"})
            custom.create_namespaced_custom_object(
                e2e_lib.GROUP, e2e_lib.VERSION, kube_namespace, e2e_lib.PLURAL, body
            )
            made.append(name)
            time.sleep(2)
    finally:
        for name in made:  # nothing is left for a controller to release
            custom.patch_namespaced_custom_object(
                e2e_lib.GROUP,
                e2e_lib.VERSION,
                kube_namespace,
                e2e_lib.PLURAL,
                name,
                {"metadata": {"finalizers": None}},
            )
            custom.delete_namespaced_custom_object(
                e2e_lib.GROUP, e2e_lib.VERSION, kube_namespace, e2e_lib.PLURAL, name
            )
    assert _exits(proc) == 1, proc.tail()
    _said_once(proc)
