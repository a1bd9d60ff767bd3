"""A ProxyPool larger than its provider can hold (issue 31), end to end: the real API server and
controller, the local provider ``tiny`` (a /30: room for 2 proxies, real Squid).

A skipped target keeps every member that fits (Ready or still Provisioning); only the failed
ones go. Before the fix the two that fit were deleted while still starting (the skip capped the
target at its 0 Ready members) and the pool sat at 0 for ``--pool-target-retry``.
"""

from __future__ import annotations

import time

import pytest
from cluster import kube_testlib

from . import e2e_lib, test_e2e
from .e2e_lib import condition
from .pool_e2e_lib import PoolE2E

pytestmark = [pytest.mark.squid]
controller_api = e2e_lib.controller_api
QUICK_RETRY = 4  # seconds: long enough for the failed members to go, short for the test
TIGHT = 60  # two members of the local provider are Ready in about 10 s


class Lost(AssertionError):
    """A member that fit was deleted or vanished: fatal at once, no point waiting on."""


@pytest.fixture
def quick(controller_api, kube_cluster, kube_namespace, tmp_path):
    """A skipped target is tried again after QUICK_RETRY s (a retry happens within the test)."""
    env = PoolE2E(controller_api, kube_cluster, kube_namespace, tmp_path)
    yield from test_e2e.started(env, ["--pool-target-retry", str(QUICK_RETRY)])


@pytest.fixture
def slow(controller_api, kube_cluster, kube_namespace, tmp_path):
    """The default retry (300 s): the target stays skipped for the whole test."""
    yield from test_e2e.started(PoolE2E(controller_api, kube_cluster, kube_namespace, tmp_path))


def _failed(member: dict) -> bool:
    return any(condition(member, c).get("status") == "True" for c in ("QuotaExceeded", "PermanentError"))


def _fitting(member: dict) -> bool:
    """Created with an address and not failed: on its way to Ready or Ready."""
    return bool((member.get("status") or {}).get("ip")) and not _failed(member)


class Watch:
    """Polls the pool's members, failing at once when a member that fit is lost."""

    def __init__(self, pools: PoolE2E, name: str):
        self.pools, self.name = pools, name
        self.kept = {}  # member name -> (uid, providerID), of every member seen fitting

    def members(self) -> dict:
        now = {m["metadata"]["name"]: m for m in self.pools.members(self.name)}
        for name in self.kept:
            if name not in now or now[name]["metadata"].get("deletionTimestamp"):
                raise Lost("member %s fit but was deleted\n%s" % (name, self.pools.pool_log()))
        for name, m in now.items():
            if _fitting(m):
                self.kept.setdefault(name, _identity(m))
        return now

    def until(self, what: str, predicate, timeout: float = TIGHT) -> dict:
        try:
            return kube_testlib.wait_for(
                what, lambda: predicate(self.members()), timeout=timeout, interval=0.5, fatal=(Lost,)
            )
        except Lost:
            raise
        except AssertionError as exc:
            raise AssertionError(
                "%s\n--- pool status ---\n%s\n--- members ---\n%s\n--- log ---\n%s"
                % (
                    exc,
                    (self.pools.pool(self.name) or {}).get("status"),
                    self.pools.describe(self.name),
                    self.pools.pool_log(),
                )
            ) from None


def _identity(member: dict) -> tuple:
    """What changes when a member is recreated: the Proxy's uid and its instance's providerID."""
    return member["metadata"]["uid"], (member.get("status") or {}).get("providerID")


def _ready(members: dict) -> list:
    return sorted(n for n, m in members.items() if condition(m, "Ready").get("status") == "True")


def _create_over_capacity(pools: PoolE2E, name: str, settled: bool = True) -> Watch:
    """4 replicas on tiny (room for 2): the 2 that fit Ready, never lost on the way; ``settled``
    (the 300 s retry): the failed ones gone too (with a quick retry new ones keep coming)."""
    pools.create_pool(name, {"replicas": 4, "template": {"provider": "tiny"}})
    watch = Watch(pools, name)
    watch.until("2 Ready", lambda ms: len(_ready(ms)) == 2 and (len(ms) == 2 or not settled))
    if settled:  # with a quick retry the skip comes and goes
        degraded = condition(pools.pool(name), "SpreadDegraded")
        assert degraded.get("status") == "True" and "QuotaExceeded" in degraded.get("message", ""), degraded
    assert sorted(watch.kept) == _ready(watch.members())
    return watch


def test_a_pool_created_over_capacity_keeps_the_members_that_fit(slow):
    watch = _create_over_capacity(slow, "over")
    slow.wait_pool(
        "over",
        lambda o: (o.get("status") or {}).get("readyReplicas") == 2 and o["status"].get("replicas") == 2,
        "status at 2 of 4",
        timeout=TIGHT,
    )
    assert sorted(watch.kept) == _ready(watch.members())


def test_a_pool_scaled_down_while_its_target_is_skipped_keeps_its_share(slow):
    watch = _create_over_capacity(slow, "down")
    slow.scale("down", 3)  # still above what fits: nothing moves
    end = time.monotonic() + 3
    while time.monotonic() < end:
        members = watch.members()  # Lost if one of the two goes
        assert len(members) == 2 and _ready(members) == sorted(watch.kept)
        time.sleep(0.5)
    slow.scale("down", 1)

    def one_left():  # one of the two goes, by the scale-down; never both
        members = {m["metadata"]["name"]: m for m in slow.members("down")}
        if not _ready(members):
            raise Lost("no Ready member left\n" + slow.pool_log())
        return len(members) == 1 and set(members) <= set(watch.kept)

    kube_testlib.wait_for("scaled to 1", one_left, timeout=TIGHT, interval=0.5, fatal=(Lost,))
    obj = slow.wait_pool(
        "down", lambda o: (o.get("status") or {}).get("readyReplicas") == 1, "status at 1", timeout=TIGHT
    )
    assert condition(obj, "SpreadDegraded").get("status") == "True"  # still skipped
    assert obj["status"]["replicas"] == 1


def test_capacity_coming_back_grows_the_pool_without_recreating_the_kept(quick):
    watch = _create_over_capacity(quick, "back", settled=False)
    before = dict(watch.kept)
    tiny = next(p for p in quick.providers["providers"] if p["name"] == "tiny")
    base = tiny["local"]["addressRange"].rsplit(".", 1)[0]
    tiny["local"]["addressRange"] = base + ".0/24"  # contains the /30: the kept addresses stay valid
    quick.controller.write_providers(quick.providers)
    watch.until("4 Ready", lambda ms: len(_ready(ms)) == 4 and len(ms) == 4)
    quick.wait_settled("back", 4, timeout=TIGHT)
    now = {m["metadata"]["name"]: _identity(m) for m in quick.members("back")}
    assert {n: now.get(n) for n in before} == before  # same names, same Proxies, same instances
