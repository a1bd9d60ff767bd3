"""One provider cannot stall the others (issue 14), end to end on the real test API server.

One controller, two providers: a local one (real Squid) and a kubernetes one whose API server is
a loopback socket that accepts and never answers, so every call there hangs past the run
timeout. The local Proxies become Ready and are never marked Retrying while the stuck provider's
runs time out again and again; the stuck Proxy alone is Retrying.
"""

from __future__ import annotations

import pytest
from cluster import kube_testlib

from . import e2e_lib, test_e2e
from .blackhole import restart_with_hole
from .e2e_lib import GROUP, PLURAL, VERSION, condition
from .test_e2e_config import Watcher

pytestmark = [pytest.mark.squid]
controller_api = e2e_lib.controller_api
e2e = test_e2e.e2e


def test_a_hanging_provider_never_holds_back_a_healthy_one(e2e, tmp_path):
    # One run slot (per provider, here): the stuck provider must not take the healthy one's.
    hole = restart_with_hole(e2e, tmp_path, ["--run-timeout", "8", "--runs-in-flight", "1"])
    watcher = None
    try:
        names = ("ok-a", "ok-b")
        e2e.create("stuck", {"provider": "hole"})
        for name in names:  # due in the same tick as the stuck one
            e2e.create(name, {"provider": "local"})
        watcher = Watcher(e2e, names)
        assert hole.accepted.wait(60), "the stuck provider was never called"
        for name in names:
            e2e.wait_ready(name)
        stuck = e2e.wait(
            "stuck",
            lambda o: o != "gone" and condition(o, "Ready").get("reason") == "Retrying",
            "the stuck Proxy Retrying (its run timed out)",
        )
        assert "timeout" in condition(stuck, "Ready")["message"]
        e2e.patch_spec("ok-a", {"port": 3130})  # and the healthy provider keeps going
        e2e.wait(
            "ok-a",
            lambda o: (
                o != "gone"
                and o["spec"]["port"] == 3130
                and o["status"].get("observedGeneration") == 2
                and condition(o, "Ready").get("status") == "True"
            ),
            "ok-a replaced while the other provider hangs",
        )
    finally:
        if watcher is not None:
            watcher.stop()
        e2e.custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            e2e.namespace,
            PLURAL,
            "stuck",
            {"metadata": {"annotations": {"crawl.example.com/skip-cleanup": "true"}}},
        )
        hole.close()
    retrying = [
        (n, s) for n, s in watcher.seen if condition({"status": s}, "Ready").get("reason") == "Retrying"
    ]
    assert retrying == [], "a healthy Proxy was marked Retrying: %s" % retrying[:1]
    kube_testlib.wait_for("the watcher saw both", lambda: {n for n, _s in watcher.seen} == set(names), 1)
