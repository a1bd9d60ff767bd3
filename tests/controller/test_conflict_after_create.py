"""A 409 right after a create (issue 38), on a real provider: the answer is dropped, not kept for
later; the key's next reconcile plans afresh and the create is asked again, which the module
answers with the instance it made (creates are idempotent by uid). The provider's own records
end with exactly one instance for the Proxy and one create call.

The real ProxyController, batcher, Executor (ansible-runner), ``proxy_instance`` and the local
provider (real Squid); only the API server is the in-memory one of fake_cluster.py, so the
conflict comes exactly at the create's status write.
"""

from __future__ import annotations

import pytest
from egress_proxies_controller.kube.client import Conflict
from egress_proxies_controller.kube.workqueue import WorkQueue
from egress_proxies_controller.proxy.controller import ProxyController
from egress_proxies_controller.proxy.reconciler import DELETE, PHASE_FINAL, Action, Settings
from egress_proxies_controller.runs import playbooks

from .fake_cluster import FakeInformer, FakeKube, proxy_object, settle
from .local_runs import Calls, local_executor

pytestmark = [pytest.mark.squid]
KEY = "ns/p1"
LIST = playbooks.playbook(
    "list",
    """\
    - name: list
      crawl.egress_proxies.proxy_info:
        provider: local
""",
)


class ConflictAfterCreate(FakeKube):
    """Someone else writes the Proxy just as the create's answer is written: one 409."""

    def __init__(self):
        super().__init__()
        self.conflicts = 0

    def write_status(self, obj, status):
        if not self.conflicts and (status or {}).get("providerID"):
            self.conflicts += 1
            raise Conflict(KEY)
        return super().write_status(obj, status)


def test_a_conflict_right_after_a_create_ends_with_one_instance_and_one_create(tmp_path):
    calls = Calls()
    executor, config = local_executor(tmp_path, "conflict-test", calls)
    kube = ConflictAfterCreate()
    kube.put(proxy_object(uid="uid-conflict-1"))
    m = ProxyController(kube, FakeInformer(kube), WorkQueue(0.01, 0.02), executor, Settings(), config)
    m.reload_config()
    m.queue.add(KEY)
    try:
        settle(m, 240)
        assert kube.conflicts == 1
        status = kube.get(KEY)["status"]
        assert status["state"] == "Running" and status["providerID"]
        assert len(calls.creates()) == 1, calls.records  # the second ask found the instance it made
        listed = executor.run_playbook("list.yml", LIST, {}, "list")["list"]["instances"]
        assert [i["id"] for i in listed] == [status["providerID"]]
    finally:
        instance = (kube.get(KEY).get("status") or {}).get("providerID", "")
        name = instance.split("/", 1)[-1]
        delete = Action(DELETE, PHASE_FINAL, "local", instance, name, "uid-conflict-1")
        executor.execute({KEY: delete}, {})
        executor.close()
