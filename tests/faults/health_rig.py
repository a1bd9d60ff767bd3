"""The health engine's surroundings for the health-link cells: the controller's own
``ProxyHealthEngine`` (with its informer, Kube client, work queue and metrics) under the
controller's ServiceAccount, watching a namespace of its own on the test API server, probing a
real Squid of the local provider through a Toxiproxy link.

The engine probes ``status.ip:spec.port``, which the providers set to the instance's own address,
so no provider can put a link in between; the rig writes the status the reconciler would have
written for the instance (Running, its providerID) with the link's address instead. Everything
the engine does from there is the shipped code: the informer's list and watch, the probe, the
status write, the Event, the queueing. The namespace is none the controller process watches, so
the rig's Proxies are the engine's alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import uuid

import kubernetes.client as k8s
from cluster import kube_testlib
from contract.local_backend import LocalBackend
from contract.suite import wait_for_state
from controller.e2e_lib import GROUP, PLURAL, VERSION, proxy_body
from egress_proxies_controller.kube.client import Kube
from egress_proxies_controller.kube.informer import Informer
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.loops.proxy_probes import ProxyHealthEngine
from egress_proxies_controller.telemetry.metrics import Metrics
from kubernetes import config as kube_config
from proxy_traffic import origin_server

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth

#: seconds the engine gives one probe (the controller's --probe-timeout default)
PROBE_TIMEOUT = 2.0
USERNAME = "prober"


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
        self.queue = WorkQueue()
        self.informer = Informer(self.kube, self.namespace, lambda _key: None)
        self._watch = threading.Thread(target=self.informer.run, daemon=True, name="rig-informer")
        self._watch.start()
        if not self.informer.synced.wait(30):
            raise RuntimeError("the rig's informer did not sync within 30 s")
        self.engine = ProxyHealthEngine(
            self.informer,
            self.kube,
            self.queue,
            Metrics(),
            interval=3600,  # rounds are driven by the cells, one at a time
            timeout=PROBE_TIMEOUT,
            concurrency=4,
            url=self.url,
        )

    def key(self, probed: Probed) -> str:
        return "%s/%s" % (self.namespace, probed.name)

    def proxy(self, name: str) -> dict:
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)

    def start(self) -> Probed:
        """A Running Squid with auth (its password a sentinel), a link in front of it, and a
        Proxy whose status says Running at the link's address, as the reconciler writes it."""
        tag = uuid.uuid4().hex[:8]
        password = "SENTINEL-%s" % uuid.uuid4().hex
        req = dataclasses.replace(self.backend.request(str(uuid.uuid4())), auth=Auth(USERNAME, password))
        provider_id = self.backend.provider.create(req, Deadline(60))
        ip = wait_for_state(self.backend, provider_id, (contract.RUNNING,))[-1].ip
        link = self.toxiproxy.create("health-" + tag, "%s:%d" % (ip, req.port))
        name = "hl-" + tag
        core = k8s.CoreV1Api(self.admin)
        core.create_namespaced_secret(
            self.namespace,
            {"metadata": {"name": name}, "stringData": {"username": USERNAME, "password": password}},
        )
        spec = {"provider": "local", "port": link.port, "auth": {"secretRef": {"name": name}}}
        self.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, proxy_body(name, spec)
        )
        status = {
            "state": "Running",
            "ip": link.listen.rsplit(":", 1)[0],
            "providerID": provider_id,
            "conditions": [],
        }
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, self.namespace, PLURAL, name, {"status": status}
        )
        return Probed(name, provider_id, (ip, req.port), link, password)

    def stop(self, probed: Probed) -> None:
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, probed.name)
        k8s.CoreV1Api(self.admin).delete_namespaced_secret(probed.name, self.namespace)
        self.toxiproxy.delete(probed.link.name)
        self.backend.provider.delete(probed.provider_id, Deadline(60))

    def events(self, probed: Probed) -> list:
        found = k8s.CoreV1Api(self.admin).list_namespaced_event(
            self.namespace, field_selector="involvedObject.name=%s" % probed.name
        )
        return [(e.type, e.reason, e.message) for e in found.items]

    def close(self) -> None:
        self.informer.stop()
        logging.getLogger("egress_proxies_controller").removeHandler(self.log)
        try:
            self._exit.close()
            self.backend.teardown()
        finally:
            kube_testlib.delete_namespace(self.admin, self.namespace)
