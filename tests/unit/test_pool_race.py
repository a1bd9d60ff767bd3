"""Two ``proxy_pool`` runs of one pool at once, in one process, on providers without a pool lock
(issue 28 §3): each run its own providers (as two ``ansible-playbook`` processes have) over one
in-memory backend per provider, and the interleavings forced with events: both list before
either creates; one run finishes (creates, lists again, trims) before the other creates; one
creates while the other trims what it listed again. Every interleaving ends with ``count`` members,
one per name, and no run removes a member the other reports.
"""

from __future__ import annotations

import datetime
import threading
import types

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import POOL_OPTIONS
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pools

T0 = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
SPREAD = [{"provider": "la", "weight": 2}, {"provider": "lb", "weight": 1}]
WAIT = 10.0


class Backend:
    """One provider's instances (name -> Instance), a clock that makes each create one second
    newer, and the gates: ``lists`` counts every listing; a create of run ``r`` waits for
    ``gates[r]``."""

    clock = 0
    clock_lock = threading.Lock()

    def __init__(self, name):
        self.name = name
        self.instances = {}
        self.lock = threading.Lock()

    @classmethod
    def tick(cls) -> datetime.datetime:
        with cls.clock_lock:
            cls.clock += 1
            return T0 + datetime.timedelta(seconds=cls.clock)


class Race:
    def __init__(self, runs: int):
        self.gates = [threading.Event() for _run in range(runs)]
        self.listed = [[] for _run in range(runs)]  # per run: one entry per list_by_tag
        self.done = [threading.Event() for _run in range(runs)]
        self.changed = threading.Condition()

    def note_list(self, run: int) -> None:
        with self.changed:
            self.listed[run].append(1)
            self.changed.notify_all()

    def wait_lists(self, run: int, how_many: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.listed[run]) >= how_many, WAIT), (run, how_many)


class MemoryProvider(contract.Provider):
    type_name = "memory"

    def __init__(self, name, installation, backend, race, run):
        super().__init__(name, installation)
        self.backend, self.race, self.run = backend, race, run

    def id_for(self, name, placement, namespace=""):
        return "mem/%s/%s" % (self.backend.name, name)

    def create(self, req, deadline):
        assert self.race.gates[self.run].wait(WAIT), "create of run %d never released" % self.run
        with self.backend.lock:
            existing = self.backend.instances.get(req.name)
            if existing is not None and existing.uid != req.uid:
                raise errors.permanent("create", self.name, "", "name taken")
            if existing is None:
                self.backend.instances[req.name] = contract.Instance(
                    id=self.id_for(req.name, None),
                    name=req.name,
                    uid=req.uid,
                    state=contract.RUNNING,
                    ip="10.0.0.%d" % (len(self.backend.instances) + 1),
                    created_at=Backend.tick(),
                    installation=self.installation,
                    made_by=self.name,
                )
        return self.id_for(req.name, None)

    def get(self, provider_id, deadline):
        with self.backend.lock:
            found = self.backend.instances.get(provider_id.rsplit("/", 1)[1])
        if found is None:
            raise errors.not_found("get", self.name, provider_id, "gone")
        return found

    def delete(self, provider_id, deadline):
        with self.backend.lock:
            self.backend.instances.pop(provider_id.rsplit("/", 1)[1], None)

    def list_by_tag(self, deadline):
        with self.backend.lock:
            listed = list(self.backend.instances.values())
        self.race.note_list(self.run)
        return listed


def _pm(race, run, backends, spread):
    parsed = config.parse(
        {
            "installation": "it",
            "providers": [
                {
                    "name": name,
                    "type": "local",
                    "local": {"stateDir": "/nonexistent/%s" % name, "addressRange": "127.77.%d.0/24" % i},
                }
                for i, name in enumerate(backends)
            ],
        }
    )
    providers = {name: MemoryProvider(name, "it", b, race, run) for name, b in backends.items()}
    params = dict.fromkeys(POOL_OPTIONS)
    params.update(pool="p3", count=6, state="present", spread=spread, timeout=WAIT, concurrency=4)
    params["spread"] = [dict({"name": None, "placement": None, "max": None}, **t) for t in spread]
    return types.SimpleNamespace(
        params=params,
        raw_params={"pool": "p3", "count": 6, "spread": spread},
        config=parsed,
        provider=providers.__getitem__,
        check_mode=False,
        diff_mode=False,
        module=types.SimpleNamespace(warn=lambda _text: None),
    )


def _race(schedule) -> tuple:
    """Run A (spread la, lb) and B (lb, la) at once; ``schedule(race)`` releases their creates."""
    Backend.clock = 0
    backends = {name: Backend(name) for name in ("la", "lb")}
    race = Race(2)
    results = [None, None]

    def one(run, spread):
        try:
            results[run] = pools.run(_pm(race, run, backends, spread))
        finally:
            race.done[run].set()

    threads = [
        threading.Thread(target=one, args=(0, SPREAD)),
        threading.Thread(target=one, args=(1, SPREAD[::-1])),
    ]
    for thread in threads:
        thread.start()
    schedule(race)
    for thread in threads:
        thread.join(WAIT)
    left = sorted((name, instance.name) for name, b in backends.items() for instance in b.instances.values())
    return results, left


def _both_list_then_both_create(race):
    race.wait_lists(0, 2)
    race.wait_lists(1, 2)
    for gate in race.gates:
        gate.set()


def _a_finishes_before_b_creates(race):
    race.wait_lists(1, 2)  # B listed the empty pool
    race.gates[0].set()
    assert race.done[0].wait(WAIT)  # A created, listed again and trimmed
    race.gates[1].set()


def _b_lists_again_before_a(race):
    """Both list, B creates and finishes (lists again, trims); A's creates come after."""
    race.wait_lists(0, 2)
    race.wait_lists(1, 2)
    race.gates[1].set()
    assert race.done[1].wait(WAIT)
    race.gates[0].set()


def _b_creates_between_a_listing_again_and_trimming(race):
    """Both list; A creates and lists again; B creates while A trims what it listed."""
    race.wait_lists(0, 2)
    race.wait_lists(1, 2)
    race.gates[0].set()
    race.wait_lists(0, 4)
    race.gates[1].set()


@pytest.mark.parametrize(
    "schedule",
    [
        _both_list_then_both_create,
        _a_finishes_before_b_creates,
        _b_lists_again_before_a,
        _b_creates_between_a_listing_again_and_trimming,
    ],
)
def test_two_unlocked_runs_end_with_count_members_one_per_name(schedule):
    results, left = _race(schedule)
    assert all(r is not None and not r.get("failed_msg") for r in results), results
    names = [name for _provider, name in left]
    assert len(left) == 6, left  # was 10 in each interleaving
    assert len(set(names)) == 6, left  # was four names on both providers
    last = [sorted((m["provider"], m["name"]) for m in r["members"]) for r in results]
    assert left in last, (left, last)  # the run that listed last reports what is left
    for members in last:
        assert len(members) == len({name for _p, name in members}) == 6, members
    made = {(r["provider"], r["name"]) for result in results for r in result["created"]}
    gone = {(r["provider"], r["name"]) for result in results for r in result["deleted"]}
    assert made - gone == set(left), (made, gone, left)
