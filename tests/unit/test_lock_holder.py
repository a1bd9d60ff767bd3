"""A lock wait that runs out names the lock and who holds it (issue 28 §7), and a pool's members
keep one instance seen through two providers of one backend (issue 28 §2)."""

from __future__ import annotations

import datetime
import fcntl
import os
import subprocess
import sys
import threading

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import (
    Deadline,
    DeadlineExceeded,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.store import Store
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pool_members
from unit.libvirt_support import make

HOLD = """
import sys, time
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.store import Store
with Store(sys.argv[1], "127.200.2.0/28").locked("proxy-a"):
    print("held", flush=True)
    time.sleep(30)
"""


def test_a_lock_timeout_names_the_lock_file_and_its_holder(tmp_path):
    state = str(tmp_path / "state")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, state], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "held"
        with (
            pytest.raises(DeadlineExceeded) as caught,
            Store(state, "127.200.2.0/28").locked("proxy-a", Deadline(0.3)),
        ):
            pass
    finally:
        holder.kill()
        holder.wait()
    message = str(caught.value)
    assert "instance proxy-a" in message
    assert os.path.join(state, "locks", "proxy-a") in message
    assert "pid=%d" % holder.pid in message


def test_a_lock_file_written_by_an_old_holder_is_still_taken(tmp_path):
    """Lock files of the old format (empty, opened for append) work as before."""
    state = tmp_path / "state"
    (state / "locks").mkdir(parents=True)
    (state / "locks" / ".store").write_text("")
    with (
        Store(str(state), "127.200.2.0/28").locked(deadline=Deadline(1)),
        open(state / "locks" / ".store") as other,
        pytest.raises(BlockingIOError),
    ):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_libvirt_lock_timeout_names_the_lock_and_the_operation_holding_it(image_server):
    """The libvirt provider's in-process locks (one per instance, one per host's base image)
    said only "wait for <key> ran past its deadline"; now also what holds it."""
    provider, _dialer, _hosts = make(image_server)
    key = "hosts/h1/domains/proxy-a"
    entered, release = threading.Event(), threading.Event()

    def hold():
        try:
            with provider.locked(key, Deadline(10), "create of %s" % key):
                entered.set()
                release.wait(10)
        finally:
            entered.set()  # also when taking it failed: the test then fails at once, not in 10 s

    holder = threading.Thread(target=hold, name="proxy_7")
    holder.start()
    try:
        assert entered.wait(10)
        with (
            pytest.raises(DeadlineExceeded) as caught,
            provider.locked(key, Deadline(0.1), "delete of %s" % key),
        ):
            pass
    finally:
        release.set()
        holder.join()
    message = str(caught.value)
    assert message.startswith("lock %s: wait for %s ran past its deadline" % (key, key)), message
    assert "held in this process by create of %s (thread proxy_7, since " % key in message, message
    with provider.locked(key, Deadline(1), "delete of %s" % key):  # let go: taken at once
        pass


def _member(provider: str, target: str, slot: int, backend: str) -> pool_members.Member:
    instance = contract.Instance(
        id="local/ps-%d" % slot,
        name="ps-%d" % slot,
        uid=pool_members.member_uid("ps", target, slot),
        state=contract.RUNNING,
        ip="127.0.0.%d" % (slot + 1),
        created_at=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
        installation="default",
    )
    return pool_members.Member(provider, target, slot, instance, backend)


def test_one_instance_seen_through_two_providers_is_never_an_extra():
    """Both providers of one stateDir list ps-0 and ps-1 (instances made before providers were
    recorded): the copy on the target's provider is kept, the other is not deleted."""
    listed = [
        _member(provider, target, slot, "local:/shared")
        for provider in ("ls1", "ls2")
        for target, slot in (("ls1", 0), ("ls2", 1))
    ]
    kept, to_go = pool_members.choose(listed, {"ls1": 1, "ls2": 1}, {"ls1": "ls1", "ls2": "ls2"})
    assert sorted((m.provider, m.name) for m in kept) == [("ls1", "ps-0"), ("ls2", "ps-1")]
    assert to_go == []


def test_a_copy_on_another_backend_is_still_an_extra():
    """The same name on two backends (what a race left) is two instances: the stray one goes."""
    listed = [_member("la", "lb", 5, "local:/la"), _member("lb", "lb", 5, "local:/lb")]
    kept, to_go = pool_members.choose(listed, {"la": 0, "lb": 1}, {"la": "la", "lb": "lb"})
    assert [(m.provider, m.name) for m in kept] == [("lb", "ps-5")]
    assert [(m.provider, m.name) for m in to_go] == [("la", "ps-5")]
