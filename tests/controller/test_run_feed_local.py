"""A run takes more creates while it works, for real (issue 38): the real ProxyController,
batcher, Executor (ansible-runner and its fork server), ``proxy_instance`` reading its
``instance_stream``, and the local provider (real Squid); only the API server is the in-memory
one of fake_cluster.py.

Five Proxies come while the first one's run is starting: they are fed to that run, so one
ansible run makes all six instances, and each Proxy is Running with its own instance.
"""

from __future__ import annotations

import time

import pytest
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.reconciler import DELETE, PHASE_FINAL, Action, Settings

from .fake_cluster import FakeInformer, FakeKube, proxy_object, settle
from .local_runs import Calls, local_executor

pytestmark = [pytest.mark.squid]
LATE = ["ns/late%d" % i for i in range(5)]
UIDS = {"ns/first": "uid-feed-first", **{key: "uid-feed-late%d" % i for i, key in enumerate(LATE)}}


def test_creates_that_come_while_a_run_starts_are_made_by_that_run(tmp_path):
    calls = Calls()
    executor, config = local_executor(tmp_path, "feed-test", calls, follow=20.0)
    assert executor.feed_window() > 0  # 300 - 120 - 20 - 10
    kube = FakeKube()
    kube.put(proxy_object(name="first", uid=UIDS["ns/first"]))
    m = ProxyController(
        kube, FakeInformer(kube), WorkQueue(0.01, 0.02), executor, Settings(running_poll=600.0), config
    )
    m.reload_config()
    try:
        m.queue.add("ns/first")
        m.process(m.queue.pop_due(10, 0))
        end = time.monotonic() + 30
        while not executor.runs_in_flight():  # its run started (ansible takes a second or more)
            assert time.monotonic() < end, "the first run never started"
            time.sleep(0.01)
        for key in LATE:
            kube.put(proxy_object(name=key.split("/")[1], uid=UIDS[key]))
            m.queue.add(key)
        m.process(m.queue.pop_due(10, 0))
        settle(m, 240)
        statuses = {key: kube.get(key)["status"] for key in ["ns/first", *LATE]}
        assert all(s["state"] == "Running" and s["providerID"] for s in statuses.values()), statuses
        assert len({s["providerID"] for s in statuses.values()}) == 6
        assert executor.runs == 1  # the five late creates were fed to the first run
        assert calls.fed == 5
        assert len(calls.creates()) == 6, calls.records
    finally:
        deletes = {}
        for key in ["ns/first", *LATE]:
            instance = (kube.get(key).get("status") or {}).get("providerID", "")
            if instance:
                name = instance.split("/", 1)[-1]
                deletes[key] = Action(DELETE, PHASE_FINAL, "local", instance, name, UIDS[key])
        try:
            answers = executor.execute(deletes, {}) if deletes else {}
            assert all(a.ok for a in answers.values()), answers  # no Squid left behind
        finally:
            executor.close()
