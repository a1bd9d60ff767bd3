"""The controller end to end on the real test API server (tests/cluster), running as a real
process under a ServiceAccount bound only by the shipped RBAC, reconciling through the modules
run by ansible-runner, against real Squid (local provider) and kwok Pods (kubernetes provider).
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import time
import urllib.request
import uuid

import pytest
from cluster import kube_testlib
from contract.local_backend import random_loopback_range
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from . import e2e_lib, monitoring_lib
from .e2e_lib import GROUP, PLURAL, VERSION, condition, proxy_body, wait_proxy

pytestmark = [pytest.mark.squid]


controller_api = e2e_lib.controller_api


class E2E:
    def __init__(self, admin, cluster, namespace, tmp_path):
        self.admin = admin
        self.custom = k8s.CustomObjectsApi(admin)
        self.namespace = namespace
        self.state_dir = str(tmp_path / "local-state")
        self.kubeconfig = e2e_lib.service_account_kubeconfig(
            admin, cluster, str(tmp_path / "controller.kubeconfig")
        )
        self.installation = "e2e-%08x" % random.SystemRandom().getrandbits(32)
        self.providers = {
            "installation": self.installation,
            "providers": [
                {
                    "name": "local",
                    "type": "local",
                    "local": {"stateDir": self.state_dir, "addressRange": random_loopback_range()},
                },
                {
                    "name": "tiny",
                    "type": "local",
                    "local": {"stateDir": self.state_dir + "-tiny", "addressRange": _tiny_range()},
                },
                {"name": "k8s", "type": "kubernetes", "kubernetes": {"kubeconfig": self.kubeconfig}},
            ],
        }
        self.controller = e2e_lib.ControllerProcess(
            str(tmp_path), self.kubeconfig, self.providers, namespace, "lease-" + namespace
        )

    def create(self, name: str, spec: dict) -> dict:
        return self.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, proxy_body(name, spec)
        )

    def patch_spec(self, name: str, spec: dict) -> dict:
        return self.custom.patch_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name, {"spec": spec}
        )

    def delete(self, name: str) -> None:
        try:
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def wait(self, name: str, predicate, what: str, timeout: float = 90):
        return wait_proxy(self.custom, self.namespace, name, predicate, what, timeout, self.controller)

    def wait_ready(self, name: str, timeout: float = 90) -> dict:
        return e2e_lib.wait_condition(self.custom, self.namespace, name, "Ready", timeout, self.controller)

    def wait_gone(self, name: str, timeout: float = 90) -> None:
        self.wait(name, lambda o: o == "gone", "%s deleted" % name, timeout)

    def instances(self, state_dir: str | None = None) -> list:
        directory = os.path.join(state_dir or self.state_dir, "instances")
        return (
            sorted(n for n in os.listdir(directory) if not n.startswith("."))
            if os.path.isdir(directory)
            else []
        )

    def events(self, name: str) -> list:
        items = (
            k8s.CoreV1Api(self.admin)
            .list_namespaced_event(self.namespace, field_selector="involvedObject.name=%s" % name)
            .items
        )
        return [(e.reason, e.message) for e in items]

    def cleanup(self) -> None:
        try:
            proxies = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL)[
                "items"
            ]
            for item in proxies:
                self.delete(item["metadata"]["name"])
            if self.controller.proc is not None and self.controller.proc.poll() is None:
                for item in proxies:
                    self.wait_gone(item["metadata"]["name"], timeout=60)
            rc = self.controller.stop()
            assert rc == 0, "controller exited %s on SIGTERM:\n%s" % (rc, self.controller.tail())
            for directory in (self.state_dir, self.state_dir + "-tiny"):
                assert self.instances(directory) == [], "instances left behind in %s" % directory
        finally:
            if self.controller.proc is not None and self.controller.proc.poll() is None:
                self.controller.kill()
            for directory in (self.state_dir, self.state_dir + "-tiny"):
                _kill_squids(directory)


def _kill_squids(state_dir: str) -> None:
    """Last resort after a failed test: stop, by recorded pid, any Squid of this state dir."""
    import glob
    import signal

    for record in glob.glob(os.path.join(state_dir, "instances", "*", "process.json")):
        with open(record) as handle:
            pid = json.load(handle).get("pid")
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                if os.path.dirname(record).encode() not in handle.read():
                    continue
            os.kill(pid, signal.SIGKILL)
        except (OSError, TypeError):
            pass


def _tiny_range() -> str:
    """A /30: two usable addresses, so the third proxy meets a real capacity limit (QuotaExceeded)."""
    base = random_loopback_range().rsplit(".", 1)[0]
    return "%s.%d/30" % (base, 4 * random.randint(1, 60))


def started(env, extra_args=()):
    """The body of a fixture: ``env``'s controller started (with ``extra_args``) and ready,
    cleaned up afterwards."""
    env.controller.start(extra_args=extra_args)
    env.controller.wait_ready()
    try:
        yield env
    finally:
        env.cleanup()


@pytest.fixture
def e2e(controller_api, kube_cluster, kube_namespace, tmp_path):
    yield from started(E2E(controller_api, kube_cluster, kube_namespace, tmp_path))


def http_through(proxy_ip: str, port: int, origin_port: int) -> dict:
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": "http://%s:%d" % (proxy_ip, port)})
    )
    with opener.open("http://127.0.0.1:%d/via-proxy" % origin_port, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture
def origin(tmp_path):
    info = tmp_path / "echo.json"
    script = os.path.join(e2e_lib.ROOT, "playbooks", "files", "echo_server.py")
    proc = subprocess.Popen(["python3", script, "--info-file", str(info), "--lifetime", "600"])
    kube_testlib.wait_for("echo server", info.exists, timeout=10)
    try:
        yield json.loads(info.read_text())["port"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_local_proxy_becomes_ready_carries_traffic_and_is_cleaned_up(e2e, origin):
    e2e.create("web", {"provider": "local"})
    obj = e2e.wait_ready("web")
    status = obj["status"]
    assert status["state"] == "Running" and status["ip"].startswith("127.")
    assert status["providerID"].startswith("local/proxy-")
    assert "crawl.example.com/proxy-cleanup" in obj["metadata"]["finalizers"]
    assert http_through(status["ip"], 3128, origin)["client"] == status["ip"]
    reasons = [r for r, _m in e2e.events("web")]
    assert "Created" in reasons and "Ready" in reasons
    # The run's telemetry is counted when the run ends, which may be after its streamed answer
    # made the Proxy Ready (the run follows the instance it made until it runs).
    created = 'egress_proxies_provider_operations_total{class="ok",op="create",provider="local"}'
    kube_testlib.wait_for("the create's run counted", lambda: created in e2e.controller.metrics(), timeout=60)
    metrics = e2e.controller.metrics()
    for series in (  # controller-runtime's names, as dashboards for operators expect them
        'workqueue_adds_total{name="proxy"}',
        'workqueue_queue_duration_seconds_count{name="proxy"}',
        'workqueue_longest_running_processor_seconds{name="proxy"}',
        'controller_runtime_reconcile_total{controller="proxy",result="requeue_after"}',
        "process_resident_memory_bytes",
        "egress_proxies_children_cpu_seconds_total",
        "egress_proxies_runner_runs_in_flight",
        'rest_client_requests_total{code="200",host=',  # every API request, client-go's names
        "rest_client_request_duration_seconds_count{host=",
        'egress_proxies_runner_phase_seconds_count{phase="startup"}',  # where a run's time goes
        'egress_proxies_runner_phase_seconds_count{phase="module"}',
    ):
        assert series in metrics, series
    e2e.delete("web")
    e2e.wait_gone("web")
    assert e2e.instances() == []


def test_spec_change_replaces_the_instance(e2e, origin):
    e2e.create("rep", {"provider": "local", "port": 3128})
    first = e2e.wait_ready("rep")["status"]
    e2e.patch_spec("rep", {"port": 3130})
    second = e2e.wait(
        "rep",
        lambda o: (
            o != "gone"
            and o["status"].get("specHash") != first["specHash"]
            and condition(o, "Ready").get("status") == "True"
        ),
        "replacement Ready",
    )["status"]
    assert second["providerID"] == first["providerID"]  # same name: the replacement reuses it
    assert http_through(second["ip"], 3130, origin)["client"] == second["ip"]
    assert len(e2e.instances()) == 1


def test_unknown_provider_latches_and_is_released_when_configured(e2e):
    e2e.create("late", {"provider": "later"})
    obj = e2e.wait(
        "late",
        lambda o: o != "gone" and condition(o, "PermanentError").get("status") == "True",
        "PermanentError latched",
    )
    assert condition(obj, "PermanentError")["reason"] == "ProviderNotConfigured"
    assert "later" in condition(obj, "Ready")["message"]
    providers = json.loads(json.dumps(e2e.providers))
    providers["providers"].append(
        {
            "name": "later",
            "type": "local",
            "local": {"stateDir": e2e.state_dir, "addressRange": random_loopback_range()},
        }
    )
    e2e.controller.write_providers(providers)
    obj = e2e.wait_ready("late")
    assert condition(obj, "PermanentError")["status"] == "False"


def test_capacity_limit_sets_quota_exceeded_and_retries(e2e):
    names = ("q1", "q2", "q3")
    for name in names:
        e2e.create(name, {"provider": "tiny"})

    def settled():
        objs = {
            n: e2e.custom.get_namespaced_custom_object(GROUP, VERSION, e2e.namespace, PLURAL, n)
            for n in names
        }
        quota = [n for n, o in objs.items() if condition(o, "QuotaExceeded").get("status") == "True"]
        ready = [n for n, o in objs.items() if condition(o, "Ready").get("status") == "True"]
        return (quota, ready, objs) if len(quota) == 1 and len(ready) == 2 else None

    quota, ready, objs = kube_testlib.wait_for("two Ready, one QuotaExceeded", settled, timeout=90)
    blocked = objs[quota[0]]
    assert "exhausted" in condition(blocked, "QuotaExceeded")["message"]
    assert not blocked["status"].get("providerID")
    assert condition(blocked, "Ready")["reason"] == "QuotaExceeded"
    e2e.delete(ready[0])
    e2e.wait_gone(ready[0])
    now_ready = e2e.wait_ready(quota[0], timeout=60)  # retried after quota_retry, now that there is room
    assert condition(now_ready, "QuotaExceeded")["status"] == "False"


def test_kubernetes_provider_proxy_becomes_ready_on_kwok(e2e):
    # kwok Pods run no Squid: with the proxy health engine off, Ready means Running.
    e2e.controller.stop()
    e2e.controller.start(extra_args=["--probe-interval", "0"])
    e2e.controller.wait_ready()
    e2e.create("pod", {"provider": "k8s"})
    obj = e2e.wait_ready("pod", timeout=120)
    namespace, name = obj["status"]["providerID"].split("/")
    pod = k8s.CoreV1Api(e2e.admin).read_namespaced_pod(name, namespace)
    assert pod.status.pod_ip == obj["status"]["ip"]


def test_a_proxy_is_ready_from_the_run_that_created_it(e2e):
    """Issue 38, Ready as they come: the create's run reads the new Pod until it runs
    (``--follow-starting``), so its Proxy is Ready with no second run to poll it, in one status
    write that says Created and then Ready. Polls are put off for 10 minutes here, the Running
    one too: the harness's 3 s round would read it 1.5 to 4.5 s after Ready."""
    e2e.controller.stop()
    polls_put_off = ["--provisioning-poll", "600", "--running-poll", "600"]
    e2e.controller.start(extra_args=["--probe-interval", "0", *polls_put_off, "--follow-starting", "30"])
    e2e.controller.wait_ready()
    e2e.create("followed", {"provider": "k8s"})
    obj = e2e.wait_ready("followed", timeout=60)
    assert obj["status"]["state"] == "Running" and obj["status"]["ip"]

    def batch_runs() -> list:  # a run is logged when it ends, which may be after the Proxy is Ready
        return e2e.controller.log_lines("runner run batch.yml")

    kube_testlib.wait_for("the create's run logged", batch_runs, timeout=60)
    time.sleep(3)  # a poll would have come 1 s after a Provisioning answer (--requeue-now)
    runs = batch_runs()
    assert len(runs) == 1 and "instances=1 gets=0 lists=0" in runs[0], runs  # nobody polled it
    reasons = [reason for reason, _message in e2e.events("followed")]
    assert "Created" in reasons and "Ready" in reasons, reasons


def test_cloud_init_from_a_secret_never_leaks(e2e):
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    k8s.CoreV1Api(e2e.admin).create_namespaced_secret(
        e2e.namespace,
        {
            "metadata": {"name": "ci"},
            "data": {"user-data": base64.b64encode(("#cloud-config\n# %s\n" % sentinel).encode()).decode()},
        },
    )
    e2e.create("sec", {"provider": "local", "cloudInit": {"secretRef": {"name": "ci", "key": "user-data"}}})
    obj = e2e.wait_ready("sec")
    assert sentinel not in json.dumps(obj)
    assert all(sentinel not in m for _r, m in e2e.events("sec"))
    assert sentinel not in e2e.controller.tail(100000)
    leaked = subprocess.run(
        ["grep", "-rl", sentinel, e2e.controller.workdir], capture_output=True, text=True, check=False
    )
    assert leaked.stdout == "", "sentinel found in %s" % leaked.stdout
    runner = os.path.join(e2e.controller.workdir, "runner")
    assert oct(os.stat(runner).st_mode & 0o777) == "0o700"


def _secret_with_sentinel(e2e, name: str) -> str:
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    k8s.CoreV1Api(e2e.admin).create_namespaced_secret(
        e2e.namespace,
        {
            "metadata": {"name": name},
            "data": {"user-data": base64.b64encode(("#cloud-config\n# %s\n" % sentinel).encode()).decode()},
        },
    )
    return sentinel


def _grep(sentinel: str, directory: str) -> str:
    """Files under ``directory`` (home, TMPDIR and work dir of the controller) holding it."""
    found = subprocess.run(["grep", "-rl", sentinel, directory], capture_output=True, text=True, check=False)
    return found.stdout


def test_cloud_init_never_reaches_disk_even_after_sigkill(e2e, tmp_path):
    """SIGKILL while a create holding a Secret's content is running (its provider's API server
    accepts and never answers): nothing of the content is in the controller's home
    (~/.ansible), its TMPDIR or its work dir, not even the run's own files."""
    from .blackhole import restart_with_hole

    hole = restart_with_hole(e2e, tmp_path)
    sentinel = _secret_with_sentinel(e2e, "ci-kill")
    try:
        e2e.create(
            "seck", {"provider": "hole", "cloudInit": {"secretRef": {"name": "ci-kill", "key": "user-data"}}}
        )
        assert hole.accepted.wait(60), "the create never reached the provider"
        e2e.controller.kill()
        assert _grep(sentinel, e2e.controller.workdir) == ""
    finally:
        hole.close()  # the orphaned module's call fails at once and it exits
        e2e.custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            e2e.namespace,
            PLURAL,
            "seck",
            {"metadata": {"annotations": {"crawl.example.com/skip-cleanup": "true"}}},
        )
        e2e.controller.write_providers(e2e.providers)
        e2e.controller.start()
        e2e.controller.wait_ready()


def test_crash_after_create_before_status_converges_to_one_instance(e2e):
    e2e.controller.stop()
    e2e.controller.start(fault="after-create")
    e2e.controller.wait_ready()
    e2e.create("crash", {"provider": "local"})
    kube_testlib.wait_for(
        "controller killed by the fault", lambda: e2e.controller.proc.poll() is not None, 60
    )
    assert e2e.controller.proc.returncode == 137
    obj = e2e.custom.get_namespaced_custom_object(GROUP, VERSION, e2e.namespace, PLURAL, "crash")
    assert not (obj.get("status") or {}).get("providerID")  # created, but never recorded
    assert len(e2e.instances()) == 1
    e2e.controller.start()
    e2e.controller.wait_ready()
    e2e.wait_ready("crash")
    assert len(e2e.instances()) == 1  # the repeated create adopted it: exactly one instance


def test_crash_during_deletion_still_releases(e2e):
    e2e.create("gone", {"provider": "local"})
    e2e.wait_ready("gone")
    e2e.controller.stop()
    e2e.controller.start(fault="after-delete")
    e2e.controller.wait_ready()
    e2e.delete("gone")
    kube_testlib.wait_for(
        "controller killed by the fault", lambda: e2e.controller.proc.poll() is not None, 60
    )
    e2e.controller.start()
    e2e.controller.wait_ready()
    e2e.wait_gone("gone")
    assert e2e.instances() == []


@pytest.mark.parametrize(
    "spec,field",
    [
        ({"provider": "local", "port": 70000}, "spec.port"),
        ({"port": 3128}, "spec.provider"),
        ({"provider": "Not_A_Label"}, "spec.provider"),
        (
            {"provider": "local", "cloudInit": {"inline": "x", "secretRef": {"name": "a", "key": "b"}}},
            "cloudInit",
        ),
        ({"provider": "local", "colour": "blue"}, "colour"),
        ({"provider": "local", "auth": {}}, "secretRef"),
        ({"provider": "local", "auth": {"secretRef": {}}}, "name"),
        ({"provider": "local", "auth": {"secretRef": {"name": "Not_A_Name"}}}, "spec.auth.secretRef.name"),
        ({"provider": "local", "auth": {"secretRef": {"name": "a", "key": "b"}}}, "key"),
        ({"provider": "local", "auth": {"secretRef": {"name": "a"}, "username": "x"}}, "username"),
    ],
)
def test_invalid_proxies_are_rejected_by_the_api_server(controller_api, kube_namespace, spec, field):
    custom = k8s.CustomObjectsApi(controller_api)
    with pytest.raises(ApiException) as caught:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, kube_namespace, PLURAL, proxy_body("bad", spec), field_validation="Strict"
        )
    assert caught.value.status in (400, 422), caught.value.body
    assert field in caught.value.body


# -- the loops (leader only): orphan GC, provider health, proxy health --------------------------


def _local_provider(e2e, installation: str):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config

    doc = {"installation": installation, "providers": [dict(e2e.providers["providers"][0])]}
    cfg = config.parse(doc)
    return registry.build(cfg.providers[0], cfg.installation)


def _backdate(e2e, name: str, hours: int = 2) -> None:
    import datetime

    path = os.path.join(e2e.state_dir, "instances", name, "instance.json")
    with open(path) as handle:
        record = json.load(handle)
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=hours)
    record["createdAt"] = then.isoformat()
    with open(path, "w") as handle:
        json.dump(record, handle)


def test_gc_collects_an_old_orphan_and_keeps_live_young_and_foreign(e2e):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import CreateRequest
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline

    e2e.create("live", {"provider": "local"})
    live = e2e.wait_ready("live")
    ours, foreign = _local_provider(e2e, e2e.installation), _local_provider(e2e, "someone-else")
    old = ours.create(CreateRequest(name="proxy-oldorphan", uid="orphan-old"), Deadline(30))
    young = ours.create(CreateRequest(name="proxy-youngorphan", uid="orphan-young"), Deadline(30))
    other = foreign.create(CreateRequest(name="proxy-foreign", uid="orphan-foreign"), Deadline(30))
    _backdate(e2e, "proxy-oldorphan")
    _backdate(e2e, "proxy-foreign")
    _backdate(e2e, live["status"]["providerID"].split("/")[1])  # old, but its Proxy lives
    try:
        e2e.controller.stop()
        e2e.controller.start(
            extra_args=["--gc-interval", "2", "--gc-min-age", "300", "--gc-own-installation"]
        )
        e2e.controller.wait_ready()
        kube_testlib.wait_for(
            "the old orphan collected", lambda: "proxy-oldorphan" not in e2e.instances(), 90
        )
        kube_testlib.wait_for(
            "another sweep", lambda: "egress_proxies_gc_kept_total{" in e2e.controller.metrics(), 30
        )
        assert {"proxy-youngorphan", "proxy-foreign", live["status"]["providerID"].split("/")[1]} <= set(
            e2e.instances()
        )
        metrics = e2e.controller.metrics()
        assert 'egress_proxies_gc_deleted_total{provider="local"} 1.0' in metrics
        assert 'reason="younger-than-min-age"' in metrics and 'reason="live"' in metrics
        assert "gc: deleted local/proxy-oldorphan" in e2e.controller.tail(100000)
    finally:
        for provider, provider_id in ((ours, young), (foreign, other), (ours, old)):
            provider.delete(provider_id, Deadline(30))


def test_provider_health_follows_the_backend_and_the_providers_file(e2e):
    e2e.controller.stop()
    e2e.controller.start(extra_args=["--health-check-interval", "2", "--health-check-timeout", "20"])
    e2e.controller.wait_ready()
    custom = e2e.custom

    def health(name):
        try:
            return custom.get_cluster_custom_object(GROUP, VERSION, "providerhealths", name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def ready_is(name, value):
        obj = health(name)
        return obj if obj and condition(obj, "Ready").get("status") == value else None

    obj = kube_testlib.wait_for("ProviderHealth local Ready", lambda: ready_is("local", "True"), 90)
    assert obj["status"]["type"] == "local"
    assert [t["name"] for t in obj["status"]["targets"]] == ["squid", "stateDir"]
    assert obj["status"]["targets"][0]["details"]["version"]
    assert kube_testlib.wait_for("ProviderHealth k8s Ready", lambda: ready_is("k8s", "True"), 90)
    broken = json.loads(json.dumps(e2e.providers))
    broken["providers"][0]["local"]["squidBinary"] = "/nonexistent/squid"
    e2e.controller.write_providers(broken)
    obj = kube_testlib.wait_for("local not Ready", lambda: ready_is("local", "False"), 90)
    assert condition(obj, "Ready")["reason"] == "SquidNotFound"
    gauge = 'egress_proxies_provider_target_ready{provider="local",target="squid"} 0.0'
    kube_testlib.wait_for("gauge", lambda: gauge in e2e.controller.metrics(), 30)
    # The shipped dashboard's and alerts' provider-health expressions name only what it exports.
    assert monitoring_lib.check_scrape(e2e.controller.metrics(), "provider-health") >= 2
    e2e.controller.write_providers(e2e.providers)
    kube_testlib.wait_for("local Ready again", lambda: ready_is("local", "True"), 90)
    fewer = json.loads(json.dumps(e2e.providers))
    fewer["providers"] = [p for p in fewer["providers"] if p["name"] != "tiny"]
    e2e.controller.write_providers(fewer)
    kube_testlib.wait_for("ProviderHealth tiny removed", lambda: health("tiny") is None, 90)


def test_a_killed_squid_turns_unhealthy_then_not_ready_and_is_recreated(e2e):
    e2e.create("fragile", {"provider": "local"})
    first = e2e.wait_ready("fragile")
    name = first["status"]["providerID"].split("/")[1]
    kube_testlib.wait_for(
        "probed healthy",
        lambda: (
            condition(
                e2e.custom.get_namespaced_custom_object(GROUP, VERSION, e2e.namespace, PLURAL, "fragile"),
                "Healthy",
            ).get("status")
            == "True"
        ),
        30,
    )
    with open(os.path.join(e2e.state_dir, "instances", name, "process.json")) as handle:
        pid = json.load(handle)["pid"]
    os.kill(pid, 9)
    seen = set()  # (Ready's status, its reason) as the reconcile wrote them

    def fragile():
        return e2e.custom.get_namespaced_custom_object(GROUP, VERSION, e2e.namespace, PLURAL, "fragile")

    def recovered():
        obj = fragile()
        ready = condition(obj, "Ready")
        seen.add((ready.get("status"), ready.get("reason")))
        # Whichever saw the dead Squid first, a probe (Unhealthy) or a poll (Stopped), the
        # reconcile turned Ready False before the instance was recreated.
        not_ready = {("False", "Unhealthy"), ("False", "Stopped")} & seen
        return obj if ready.get("status") == "True" and not_ready else None

    obj = kube_testlib.wait_for("unhealthy, then recreated and Ready", recovered, 90, interval=0.2)
    # The new Squid is probed afresh: no observation of the dead one keeps it unhealthy.
    kube_testlib.wait_for(
        "the new Squid probed healthy",
        lambda: (
            condition(fragile(), "Healthy").get("status") == "True"
            and condition(fragile(), "Ready").get("status") == "True"
        ),
        30,
    )
    assert obj["status"]["providerID"] == first["status"]["providerID"]  # same name, new Squid
    with open(os.path.join(e2e.state_dir, "instances", name, "process.json")) as handle:
        assert json.load(handle)["pid"] != pid
    reasons = [r for r, _m in e2e.events("fragile")]
    assert "Unhealthy" in reasons or "Stopped" in reasons
