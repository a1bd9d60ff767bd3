"""An upgrade from 0.2.0, the last release, keeps pools and credentials as they are (issue 40 §6).

``test_e2e_upgrade.py`` starts from 0.1.0, which had no pools and no auth. This test installs
0.2.0 the same way (its collection and controller read from this checkout's history, its CRDs
and RBAC on a control plane of its own) and lets its controller make, on the local provider
(real Squid): a ProxyPool of two members using ``template.auth`` and a Proxy using
``spec.auth``, both from one Secret. Then the upgrade as docs/controller.md tells it (this
tree's CRDs and RBAC, this tree's controller standing by, the release's stopped), and after two
poll rounds and an orphan GC sweep of this tree's controller:

- its metrics show no create and no delete, and GC kept every instance as live;
- the same Squid processes (pid and start time), serving with the same credentials (200 with
  them, 407 without);
- the same Proxy objects (UIDs) and of each its whole status, finalizers and generation; the
  pool's status (plus the one condition 0.2.0 did not have, ``Published``); every Secret of
  the namespace (the user's, the pool's credential copy, its endpoints Secret) with the same
  UID, resourceVersion and data; no Event but 0.2.0's;
- then this tree's controller deletes the pool and the Proxy, and with them every instance.
"""

from __future__ import annotations

import difflib
import json
import random

import pytest
from cluster import kube_testlib
from kubernetes import client as k8s
from proxy_traffic import fetch_via, origin_server

from . import e2e_lib, test_e2e_upgrade
from .e2e_lib import GROUP, PLURAL, VERSION, proxy_body
from .test_e2e_upgrade import carried, event_counts, polled_untouched, squids

pytestmark = [pytest.mark.squid]
plane = test_e2e_upgrade.plane

RELEASE = "0.2.0"
RELEASE_COMMIT = "2198661a5faafcba811a417de7a9cac6947a623b"  # changelogs/releases.yml
POOLS = "proxypools"
CREDENTIALS = ("crawler", "Upgrade-Pw-%08x" % random.SystemRandom().getrandbits(32))
OLD_FLAGS = ["--running-poll", "60", "--probe-interval", "0"]
NEW_FLAGS = ["--running-poll", "3", "--probe-interval", "0", "--gc-interval", "15", "--gc-jitter", "0"]
NEW_FLAGS += ["--gc-min-age", "0", "--gc-own-installation"]
MEMBERS = 2
# The pool conditions this tree writes and 0.2.0 did not know (issue 30's Published): the one
# change an upgrade makes to a pool's status, added beside the others, which stay as they were.
NEW_POOL_CONDITIONS = {"Published": ("True", "Published")}


def pool_body(name: str) -> dict:
    return {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "ProxyPool",
        "metadata": {"name": name},
        "spec": {
            "replicas": MEMBERS,
            "template": {"provider": "local", "auth": {"secretRef": {"name": "creds"}}},
        },
    }


def secrets(admin, namespace: str) -> dict:
    return {
        s.metadata.name: (s.metadata.uid, s.metadata.resource_version, s.data)
        for s in k8s.CoreV1Api(admin).list_namespaced_secret(namespace).items
    }


def pool_state(custom, namespace: str) -> dict:
    pool = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, POOLS, "pool")
    return {"uid": pool["metadata"]["uid"], **carried(pool)}


def serving(proxies: list, origin) -> dict:
    """name -> (status with the credentials, status without) through its own proxy."""
    out = {}
    for obj in proxies:
        ip = obj["status"]["ip"]
        out[obj["metadata"]["name"]] = (
            fetch_via(ip, 3128, origin, "127.0.0.1", CREDENTIALS)[0],
            fetch_via(ip, 3128, origin, "127.0.0.1")[0],
        )
    return out


def test_an_upgrade_from_0_2_0_keeps_pools_auth_proxies_and_their_secrets(plane, tmp_path):
    _cluster, admin = plane
    release = test_e2e_upgrade.installed_release(plane, tmp_path, RELEASE, RELEASE_COMMIT)
    old_root, old_collection, old_config = release.root, release.collection, release.config
    namespace, state_dir = release.namespace, release.state_dir
    custom, core = k8s.CustomObjectsApi(admin), k8s.CoreV1Api(admin)
    old, new = test_e2e_upgrade.controller_pair(release, tmp_path)
    try:
        core.create_namespaced_secret(
            namespace,
            {
                "metadata": {"name": "creds"},
                "stringData": dict(zip(("username", "password"), CREDENTIALS, strict=True)),
            },
        )
        custom.create_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            proxy_body("authp", {"provider": "local", "auth": {"secretRef": {"name": "creds"}}}),
        )
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, POOLS, pool_body("pool"))
        old.start(extra_args=OLD_FLAGS, code=old_collection, collections=old_root)
        old.wait_ready()

        def all_ready():
            objs = e2e_lib.proxies(custom, namespace)
            pool = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, POOLS, "pool")
            return (
                len(objs) == MEMBERS + 1
                and all(e2e_lib.is_ready(o) for o in objs)
                and (pool.get("status") or {}).get("readyReplicas") == MEMBERS
                and objs
            )

        try:
            ready = kube_testlib.wait_for("0.2.0 makes the pool and the Proxy Ready", all_ready, timeout=180)
        except AssertionError as exc:
            raise AssertionError("%s\n--- 0.2.0's log ---\n%s" % (exc, old.tail())) from None
        # It really is the release that runs: 0.2.0's metrics answer without authentication
        # and it has no --metrics-insecure flag.
        assert not e2e_lib.controller_knows(old_collection, "--metrics-insecure")
        assert "egress_proxies_leader 1.0" in old.metrics()
        with origin_server() as origin:
            served_before = serving(ready, origin)
        assert set(served_before.values()) == {(200, 407)}, served_before
        before = {o["metadata"]["name"]: (o["metadata"]["uid"], carried(o)) for o in ready}
        pool_before, secrets_before = pool_state(custom, namespace), secrets(admin, namespace)
        assert len(secrets_before) >= 2, secrets_before  # the user's and the pool's copy at least
        local_before = squids(state_dir)
        assert len(local_before) == MEMBERS + 1 and all(s != "dead" for _p, s in local_before.values())
        events_before = event_counts(admin, namespace)

        # The upgrade: CRDs and RBAC first, then the new controller beside the old one, then the old one goes.
        test_e2e_upgrade.check_crds(admin, old_config, ("proxies", "providerhealths", POOLS), RELEASE)
        test_e2e_upgrade.install(admin, e2e_lib.CONFIG)
        new.start(extra_args=NEW_FLAGS)
        new.wait_ready()
        assert "\negress_proxies_leader 0.0\n" in new.metrics()
        test_e2e_upgrade.released_controller_stopped(old)

        polled_untouched(new, {"local": MEMBERS + 1}, RELEASE)
        assert squids(state_dir) == local_before
        after_objs = e2e_lib.proxies(custom, namespace)
        after = {o["metadata"]["name"]: (o["metadata"]["uid"], carried(o)) for o in after_objs}
        assert after == before
        pool_after = pool_state(custom, namespace)
        added = [c for c in pool_after["status"]["conditions"] if c["type"] in NEW_POOL_CONDITIONS]
        assert {c["type"]: (c["status"], c["reason"]) for c in added} == NEW_POOL_CONDITIONS, added
        pool_after["status"]["conditions"] = [c for c in pool_after["status"]["conditions"] if c not in added]
        assert pool_after == pool_before, "\n".join(
            difflib.unified_diff(
                json.dumps(pool_before, indent=1, sort_keys=True).splitlines(),
                json.dumps(pool_after, indent=1, sort_keys=True).splitlines(),
                RELEASE,
                "this tree",
                lineterm="",
            )
        )
        assert secrets(admin, namespace) == secrets_before
        with origin_server() as origin:
            assert serving(after_objs, origin) == served_before
        assert event_counts(admin, namespace) == events_before

        # This tree's controller deletes what 0.2.0 made.
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, POOLS, "pool")
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "authp")
        kube_testlib.wait_for(
            "every Proxy gone", lambda: e2e_lib.proxies(custom, namespace) == [], timeout=120
        )
        kube_testlib.wait_for("every Squid gone", lambda: squids(state_dir) == {}, timeout=60)
        assert new.stop() == 0, new.tail()
    finally:
        test_e2e_upgrade.leave_nothing_running((old, new), state_dir)
