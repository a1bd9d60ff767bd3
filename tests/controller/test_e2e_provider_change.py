"""Replacement and deletion talk to the provider that made the instance (issue 14), end to end.

A Proxy moved from one local provider to another (same type, two state directories) ends with
exactly one instance, on the new provider: the old one was deleted where it lived, not looked up
under its id on the new provider. A Proxy deleted after a crash between its create and the status
write (no providerID recorded) has its instance looked up by name and deleted, not leaked.
"""

from __future__ import annotations

import json

import pytest
from cluster import kube_testlib
from contract.local_backend import random_loopback_range

from . import e2e_lib, test_e2e
from .e2e_lib import GROUP, PLURAL, VERSION, condition

pytestmark = [pytest.mark.squid]
controller_api = e2e_lib.controller_api
e2e = test_e2e.e2e


def test_changing_the_provider_deletes_on_the_old_one_and_creates_on_the_new(e2e):
    other_dir = e2e.state_dir + "-other"
    providers = json.loads(json.dumps(e2e.providers))
    providers["providers"].append(
        {
            "name": "other",
            "type": "local",
            "local": {"stateDir": other_dir, "addressRange": random_loopback_range()},
        }
    )
    e2e.controller.write_providers(providers)
    try:
        e2e.create("mover", {"provider": "local"})
        first = e2e.wait_ready("mover")["status"]
        assert len(e2e.instances()) == 1
        kube_testlib.wait_for(
            "the new provider in use", lambda: "k8s, other" in e2e.controller.tail(100000), 30
        )
        e2e.patch_spec("mover", {"provider": "other"})
        moved = e2e.wait(
            "mover",
            lambda o: (
                o != "gone"
                and o["status"].get("specHash") != first["specHash"]
                and condition(o, "Ready").get("status") == "True"
            ),
            "Ready with the new spec",
        )["status"]
        assert e2e.instances() == []  # deleted where it lived, not looked up on the new provider
        assert len(e2e.instances(other_dir)) == 1  # exactly one instance, on the new provider
        assert (first.get("provider"), moved.get("provider")) == ("local", "other")
        e2e.delete("mover")
        e2e.wait_gone("mover")
        assert e2e.instances(other_dir) == []
    finally:
        test_e2e._kill_squids(other_dir)  # only after a failure is anything left there


def test_deleting_a_proxy_whose_create_was_never_recorded_deletes_its_instance(e2e):
    e2e.controller.stop()
    e2e.controller.start(fault="after-create")
    e2e.controller.wait_ready()
    e2e.create("unrecorded", {"provider": "local"})
    kube_testlib.wait_for(
        "controller killed by the fault", lambda: e2e.controller.proc.poll() is not None, 60
    )
    obj = e2e.custom.get_namespaced_custom_object(GROUP, VERSION, e2e.namespace, PLURAL, "unrecorded")
    assert not (obj.get("status") or {}).get("providerID") and len(e2e.instances()) == 1
    e2e.delete("unrecorded")  # deleted before the controller ever recorded the instance
    e2e.controller.start()
    e2e.controller.wait_ready()
    e2e.wait_gone("unrecorded")
    assert e2e.instances() == []  # looked up by name and deleted, not leaked
