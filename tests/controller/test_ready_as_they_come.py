"""Ready as they come (issue 38): a Proxy's status is written as soon as its own item of a batch
is answered, not when the whole batch ends. The executor streams each create's answer as its
item finishes (``on_answer``, fed by the module's result_stream); the answer's event brings the
key back to a worker, whose reconcile writes it. Runs the real ProxyController loop, WorkQueue,
batcher and Reconciler over the in-memory API of fake_cluster.py."""

from __future__ import annotations

import threading
import time

from .fake_cluster import FakeKube, proxy_object
from .test_manager_snapshots import manager, running

FIRST, LAST = "ns/p1", "ns/p2"


class StreamingExecutor:
    """Answers the first item at once on the stream, then blocks (the batch's last item still
    running) until the test saw the first Proxy's status; the final results answer both."""

    def __init__(self):
        self.release = threading.Event()
        self.calls = []

    def execute(self, actions, create_fields, on_answer=None):
        self.calls.append(sorted(actions))
        answers = {k: running(k, a, create_fields.get(k)) for k, a in actions.items()}
        if on_answer is not None:
            on_answer(FIRST, answers[FIRST])
        self.release.wait(30)
        return answers

    def abort_all(self):
        self.release.set()


def _provider_id(kube, key: str) -> str:
    return (kube.get(key).get("status") or {}).get("providerID", "")


def test_the_first_answered_item_is_written_before_the_batchs_last_is_answered(providers_file):
    kube = FakeKube()
    kube.put(proxy_object(name="p1", uid="uid-1"))
    kube.put(proxy_object(name="p2", uid="uid-2"))
    executor = StreamingExecutor()
    m = manager(kube, executor, providers_file)
    m.tick = 0.05
    for key in (FIRST, LAST):
        m.queue.add(key)
    loop = threading.Thread(target=m.run, daemon=True)
    loop.start()
    try:
        end = time.monotonic() + 20
        while not _provider_id(kube, FIRST) and time.monotonic() < end:
            time.sleep(0.01)
        assert _provider_id(kube, FIRST), "the first Proxy waited for its whole batch"
        assert not _provider_id(kube, LAST)  # its item is still running
        assert executor.calls == [[FIRST, LAST]]  # one batch carried both
        executor.release.set()
        while not _provider_id(kube, LAST) and time.monotonic() < end:
            time.sleep(0.01)
        assert _provider_id(kube, LAST)
    finally:
        executor.release.set()
        m.stop.set()
        m.queue.shutdown()
        loop.join(10)
    # The final results answered the first item again: applied once (one create's status write).
    written = [s for key, s in kube.status_writes if key == FIRST and s.get("providerID")]
    assert len(written) == 1
    assert len(executor.calls) == 1


class ProvisioningFirst(StreamingExecutor):
    """The first item streams Provisioning (its key is polled again at once, a new call that
    waits for the provider's busy run); the final results repeat that create's answer."""

    def execute(self, actions, create_fields, on_answer=None):
        if len(self.calls) or FIRST not in actions or actions[FIRST].op != "create":
            self.calls.append(sorted(actions))
            return {k: running(k, a, create_fields.get(k)) for k, a in actions.items()}
        self.calls.append(sorted(actions))
        answers = {k: running(k, a, create_fields.get(k)) for k, a in actions.items()}
        answers[FIRST].instance["state"] = "Provisioning"
        on_answer(FIRST, answers[FIRST])
        self.release.wait(30)
        return answers


def test_a_late_copy_of_an_answer_never_answers_the_keys_next_call(providers_file):
    """The streamed answer was applied and the key asked for its next call (a poll, waiting for
    the busy provider); the run's final results then repeat the create's answer: it is dropped,
    not delivered as the poll's answer (one Created Event, one create status write)."""
    kube = FakeKube()
    kube.put(proxy_object(name="p1", uid="uid-1"))
    kube.put(proxy_object(name="p2", uid="uid-2"))
    executor = ProvisioningFirst()
    m = manager(kube, executor, providers_file)
    m.tick = 0.05
    for key in (FIRST, LAST):
        m.queue.add(key)
    loop = threading.Thread(target=m.run, daemon=True)
    loop.start()
    try:
        end = time.monotonic() + 20
        # The first run started (before it does, both creates wait for it), then the poll waits.
        while not (executor.calls and m.batcher.waiting("local")) and time.monotonic() < end:
            time.sleep(0.01)
        assert m.batcher.waiting("local") == [FIRST], executor.calls  # its poll waits for the busy run
        executor.release.set()
        while len(executor.calls) < 2 and time.monotonic() < end:
            time.sleep(0.01)
        while m.busy() and time.monotonic() < end:
            time.sleep(0.01)
    finally:
        executor.release.set()
        m.stop.set()
        m.queue.shutdown()
        loop.join(10)
    assert executor.calls[1] == [FIRST]  # the poll ran, answered by its own run
    created = [e for e in kube.events if e[0] == FIRST and e[2] == "Created"]
    assert len(created) == 1
    assert (kube.get(FIRST)["status"] or {}).get("state") == "Running"
