"""A rotated credential file plans again only the latched Proxies of its provider: the others
keep their polls (a kubelet rotating a Secret must not turn 10,000 Proxies into one burst)."""

from __future__ import annotations

import os

from egress_proxies_controller import api
from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.reconciler import Settings

from .fake_cluster import FakeInformer, FakeKube, proxy_object


class NoRuns:
    """Nothing is dispatched here: only what reload_config queues is looked at."""

    providers_file = ""


LATCHED = {
    "providerID": "k/proxy-x",
    "provider": "k",
    "conditions": [
        {
            "type": api.COND_PERMANENT,
            "status": "True",
            "reason": "GetFailed",
            "message": "401",
            "observedGeneration": 1,
            "lastTransitionTime": "2026-12-02T07:00:00Z",
        }
    ],
}


def _proxy(name: str, provider: str, latched: bool) -> dict:
    obj = proxy_object(name=name, uid="u-" + name, provider=provider)
    obj["status"] = dict(LATCHED, provider=provider) if latched else {"providerID": provider + "/x"}
    return obj


def _queued(m: ProxyController) -> list:
    keys = sorted(m.queue.pop_due(100, 0))
    for key in keys:
        m.queue.done(key)
    return keys


def test_a_rotation_plans_again_only_its_providers_latched_proxies(tmp_path):
    key = tmp_path / "kubeconfig"
    key.write_bytes(b"token: one\n")
    path = tmp_path / "providers.yaml"
    path.write_text(
        "providers:\n  - {name: k, type: kubernetes, kubernetes: {kubeconfig: %s}}\n"
        "  - {name: l, type: local}\n" % key
    )
    kube = FakeKube()
    for name, provider, latched in (("k1", "k", True), ("k2", "k", False), ("l1", "l", True)):
        kube.put(_proxy(name, provider, latched))
    config = ProvidersConfig(str(path), os.path.join(tmp_path, "private"), lambda _p, _n: [])
    m = ProxyController(kube, FakeInformer(kube), WorkQueue(0.01, 0.02), NoRuns(), Settings(), config)
    m.reload_config()
    assert _queued(m) == ["ns/k1", "ns/k2", "ns/l1"]  # the first version: every provider changed
    os.replace(str(key), str(tmp_path / "old"))
    (tmp_path / "new").write_bytes(b"token: two\n")
    os.replace(str(tmp_path / "new"), str(key))
    m.reload_config()
    assert _queued(m) == ["ns/k1"]
    assert m.reconciler.epochs == {"k": 2, "l": 1}
