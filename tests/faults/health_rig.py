"""The health path's surroundings for the health-link cells: the controller's own
``ProxyHealthEngine`` and ``ProxyController`` (one informer, Kube client, work queue and
``HealthObservations`` between them, as ``__main__`` wires them) under the controller's
ServiceAccount, watching a namespace of its own on the test API server, probing a real Squid of
the local provider through a Toxiproxy link.

The engine probes ``status.ip:spec.port``, which the providers set to the instance's own address,
so no provider can put a link in between. The one stand-in is the manager's executor
(``LinkProvider``): it answers every call about the Proxy as the local provider would about the
rig's Squid, Running, but at the link's address. Everything else is the shipped code: the
informer's list and watch, the probe, the observation, the queueing of a changed verdict, the
reconcile that writes Healthy and Ready with the snapshot's resourceVersion, its Event and its
read of the instance. The namespace is none the controller process watches, so the rig's Proxies
are this manager's alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
import uuid

import kubernetes.client as k8s
from cluster import kube_testlib
from contract.local_backend import LocalBackend
from contract.suite import wait_for_state
from controller.e2e_lib import GROUP, PLURAL, VERSION, proxy_body
from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.kube.client import Kube
from egress_proxies_controller.kube.informer import Informer
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.loops.proxy_probes import ProxyHealthEngine
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.health_observations import HealthObservations
from egress_proxies_controller.proxy.model import DELETE, NOT_FOUND, PHASE_POLL, Answer, Settings
from egress_proxies_controller.telemetry.metrics import Metrics
from kubernetes import config as kube_config
from proxy_traffic import origin_server

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth

#: seconds the engine gives one probe (the controller's --probe-timeout default)
PROBE_TIMEOUT = 2.0
USERNAME = "prober"
#: polls only when the health engine queues the key: every read of the instance is its doing
SETTINGS = Settings(
    provisioning_poll=3600, deletion_poll=0.2, requeue_now=0.05, quota_retry=3600, running_poll=3600
)
#: seconds the manager gets to reconcile a key the engine queued (or a Proxy made or deleted)
SETTLE = 30.0


class LinkProvider:
    """The manager's executor: the local provider's answers about the rig's Squids, each at its
    link's address (``instances``: key -> (providerID, ip)); a delete finds nothing (the rig
    deletes its Squids itself). ``calls``: (key, op, phase) of every call made."""

    providers_file = None  # the manager sets it; nothing here reads it

    def __init__(self):
        self.instances: dict = {}
        self.calls: list = []

    def execute(self, actions: dict, _create_fields: dict, on_answer=None) -> dict:
        answers = {}
        for key, action in actions.items():
            self.calls.append((key, action.op, action.phase))
            found = self.instances.get(key)
            if action.op == DELETE or found is None:
                answers[key] = Answer(ok=False, error_class=NOT_FOUND, message="no instance")
                continue
            provider_id, ip = found
            instance = {
                "id": provider_id,
                "name": action.name,
                "uid": action.uid,
                "state": "Running",
                "ip": ip,
            }
            answers[key] = Answer(ok=True, instance=instance)
        return answers

    def abort_all(self) -> None:
        """Nothing runs in the background here."""


class _Lines(logging.Handler):
    """Every record the controller's loggers emit while the rig runs (for the secret check)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@dataclasses.dataclass
class Probed:
    """One cell's Proxy: the instance behind it, its link, its Secret's password."""

    name: str
    provider_id: str
    squid: tuple  # (ip, port) of the instance itself
    link: object  # faults.toxiproxy.Proxy in front of it
    password: str


class HealthRig:
    def __init__(self, env, toxiproxy, tmp_path):
        self.env, self.toxiproxy = env, toxiproxy
        self.admin = env.admin
        self.custom = k8s.CustomObjectsApi(env.admin)
        self.namespace = kube_testlib.create_namespace(env.admin)
        self.backend = LocalBackend(tmp_path)
        self._exit = contextlib.ExitStack()
        self.url = "http://%s:%d/probe" % tuple(self._exit.enter_context(origin_server()))
        self.log = _Lines()
        logging.getLogger("egress_proxies_controller").addHandler(self.log)
        logging.getLogger("egress_proxies_controller").setLevel(logging.INFO)
        # the controller's ServiceAccount, dialled directly: only the proxy link is faulted
        self.kube = Kube(kube_config.new_client_from_config(env.kubeconfig))
        self.queue = WorkQueue(0.05, 0.5)
        self.informer = Informer(self.kube, self.namespace, self.queue.add)
        self._watch = threading.Thread(target=self.informer.run, daemon=True, name="rig-informer")
        self._watch.start()
        if not self.informer.synced.wait(30):
            raise RuntimeError("the rig's informer did not sync within 30 s")
        providers = tmp_path / "providers.yaml"
        providers.write_text("providers:\n  - {name: local, type: local}\n")
        config = ProvidersConfig(str(providers), str(tmp_path / "config"), lambda _path, _names: [])
        self.observations = HealthObservations()
        self.provider = LinkProvider()
        self.manager = ProxyController(
            self.kube,
            self.informer,
            self.queue,
            self.provider,
            SETTINGS,
            config,
            tick=0.05,
            gather_while_busy=0.0,
            observations=self.observations,
        )
        self._manage = threading.Thread(target=self.manager.run, daemon=True, name="rig-manager")
        self._manage.start()
        self.engine = ProxyHealthEngine(
            self.informer,
            self.kube,
            self.queue,
            self.observations,
            Metrics(),
            interval=3600,  # rounds are driven by the cells, one at a time
            timeout=PROBE_TIMEOUT,
            concurrency=4,
            url=self.url,
        )

    def key(self, probed: Probed) -> str:
        return self.key_of(probed.name)

    def key_of(self, name: str) -> str:
        return "%s/%s" % (self.namespace, name)

    def proxy(self, name: str) -> dict:
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)

    def settle(self, key: str) -> None:
        """Wait (up to ``SETTLE``) until nothing of ``key``'s is under way and its status
        says what the engine last saw; the cell's checks then read what the reconcile wrote."""
        deadline = time.monotonic() + SETTLE
        while time.monotonic() < deadline:
            seen = self.observations.latest(key)
            obj = self.proxy(key.split("/", 1)[1])  # the API's, not the cache's
            healthy = next(
                (c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == "Healthy"), {}
            )
            if not self._under_way(key) and (
                seen is None or (healthy.get("status"), healthy.get("reason")) == seen.verdict()
            ):
                return
            time.sleep(0.05)

    def _under_way(self, key: str) -> bool:
        """The manager is reconciling ``key``, calling its provider or has an answer to apply."""
        return (
            key in self.manager.in_flight
            or key in self.manager.answers.waiting()
            or self.queue.processing_any(lambda k: k == key)
        )

    def reads(self, key: str) -> int:
        """How often the manager asked the provider about ``key``'s instance."""
        return sum(1 for k, _op, phase in list(self.provider.calls) if k == key and phase == PHASE_POLL)

    def deletes(self, key: str) -> int:
        return sum(1 for k, op, _phase in list(self.provider.calls) if k == key and op == DELETE)

    def start(self) -> Probed:
        """A Running Squid with auth (its password a sentinel), a link in front of it, and a
        Proxy the manager reconciled to Running at the link's address (``LinkProvider``)."""
        tag = uuid.uuid4().hex[:8]
        password = "SENTINEL-%s" % uuid.uuid4().hex
        req = dataclasses.replace(self.backend.request(str(uuid.uuid4())), auth=Auth(USERNAME, password))
        provider_id = self.backend.provider.create(req, Deadline(60))
        ip = wait_for_state(self.backend, provider_id, (contract.RUNNING,))[-1].ip
        link = self.toxiproxy.create("health-" + tag, "%s:%d" % (ip, req.port))
        name = "hl-" + tag
        self.provider.instances[self.key_of(name)] = (provider_id, link.listen.rsplit(":", 1)[0])
        core = k8s.CoreV1Api(self.admin)
        core.create_namespaced_secret(
            self.namespace,
            {"metadata": {"name": name}, "stringData": {"username": USERNAME, "password": password}},
        )
        spec = {"provider": "local", "port": link.port, "auth": {"secretRef": {"name": name}}}
        self.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, proxy_body(name, spec)
        )
        probed = Probed(name, provider_id, (ip, req.port), link, password)
        deadline = time.monotonic() + SETTLE
        while (self.proxy(name).get("status") or {}).get("state") != "Running":
            if time.monotonic() > deadline:
                raise RuntimeError("the rig's manager did not make %s Running within %.0f s" % (name, SETTLE))
            time.sleep(0.05)
        return probed

    def stop(self, probed: Probed) -> None:
        """The Proxy deleted (the manager releases it: its delete finds nothing), then the rest."""
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, probed.name)
        deadline = time.monotonic() + SETTLE
        while probed.name in [o["metadata"]["name"] for o in self._proxies()] and time.monotonic() < deadline:
            time.sleep(0.05)
        k8s.CoreV1Api(self.admin).delete_namespaced_secret(probed.name, self.namespace)
        self.toxiproxy.delete(probed.link.name)
        self.backend.provider.delete(probed.provider_id, Deadline(60))

    def _proxies(self) -> list:
        return self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL)["items"]

    def events(self, probed: Probed) -> list:
        found = k8s.CoreV1Api(self.admin).list_namespaced_event(
            self.namespace, field_selector="involvedObject.name=%s" % probed.name
        )
        return [(e.type, e.reason, e.message) for e in found.items]

    def close(self) -> None:
        self.manager.stop.set()
        self.queue.shutdown()
        self._manage.join(60)
        self.informer.stop()
        logging.getLogger("egress_proxies_controller").removeHandler(self.log)
        try:
            self._exit.close()
            self.backend.teardown()
        finally:
            kube_testlib.delete_namespace(self.admin, self.namespace)
