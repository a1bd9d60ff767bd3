"""The inventory plugin through a real ``ansible-inventory`` run on the kubernetes provider, against
the real test control plane (tests/cluster): a Pod created through the modules is a host of the
``proxies`` group with the Pod's IP as ``ansible_host``, listed as the provider's namespaced
ServiceAccount with exactly the documented RBAC (the identity ``k8s_env`` builds).
"""

from __future__ import annotations

import ipaddress
import uuid

import pytest

from . import inventory_cli as cli
from . import test_modules_kubernetes as kubernetes_modules
from .playbook import run_playbook

pytestmark = pytest.mark.playbook

PI = "crawl.egress_proxies.proxy_instance"

k8s_env = kubernetes_modules.k8s_env  # the provider's identity, and no Pod left at teardown


def test_pods_are_hosts_of_the_kubernetes_groups(tmp_path, k8s_env, kube_cluster):
    ns = k8s_env["namespace"]
    defaults = k8s_env["defaults"]
    providers_file = cli.write_providers(tmp_path, defaults)
    item = {"provider": "k8s", "uid": str(uuid.uuid4()), "namespace": ns, "wait": True, "wait_timeout": 60}
    run = run_playbook(
        tmp_path, [{"name": "create", PI: item}], module_defaults={"providers_file": providers_file}
    )
    assert run.rc == 0, run.stdout[-3000:]
    created = run["create"]["instance"]
    try:
        listed = cli.inventory(cli.write_source(tmp_path, providers_file=providers_file), "--list")
        assert listed.rc == 0, listed.stderr
        assert list(listed.hostvars) == [created["name"]]
        facts = listed.hostvars[created["name"]]["egress_proxies"]
        assert (facts["id"], facts["type"], facts["state"], facts["zone"]) == (
            "%s/%s" % (ns, created["name"]),
            "kubernetes",
            "Running",
            "",
        )
        assert facts["installation"] == k8s_env["installation"]
        ip = listed.hostvars[created["name"]]["ansible_host"]
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(kube_cluster.pod_cidr)
        for group in ("provider_k8s", "type_kubernetes", "state_running"):
            assert listed.hosts_of(group) == [created["name"]]
    finally:
        gone = run_playbook(
            tmp_path,
            [{"name": "delete", PI: dict(item, state="absent")}],
            module_defaults={"providers_file": providers_file},
        )
        assert gone.rc == 0, gone.stdout[-3000:]
