"""Two ``proxy_pool`` runs on one pool at once where no lock serialises them (issue 28 §3):
two gcp providers (two zones of one project, on the fake Compute Engine API of
tests/fakes/gcp), real ``ansible-playbook`` runs.

The fake holds every instance insert until both runs have listed the pool, so both plan from
the same empty listing: the interleaving a real race hits by chance, made certain. Before each
run listed the pool again and trimmed it (``pool_members.trim``), both succeeded, 10 instances
were left and four names were on both providers.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from .playbook import run_playbook
from .test_modules_gcp import fake as fake_api

pytestmark = [pytest.mark.playbook]

PP = "crawl.egress_proxies.proxy_pool"
IMAGE = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64"
ZONES = {"ga": "us-central1-a", "gb": "us-central1-b"}
FORWARD = [
    {"provider": "ga", "weight": 2, "placement": {"zone": ZONES["ga"]}},
    {"provider": "gb", "weight": 1, "placement": {"zone": ZONES["gb"]}},
]
POOL = {
    "pool": "p3",
    "count": 6,
    "placement": {"region": "us-central1", "machine_type": "e2-small", "image": IMAGE},
    "timeout": 120,
}


fake = fake_api  # test_modules_gcp's fixture (the fake API server), by its name


@pytest.fixture
def two_gcp(tmp_path, fake):
    """Module defaults for two gcp providers on the fake; the pool is removed at teardown."""
    fake.state.quotas["us-central1"].update(
        INSTANCES=40.0, CPUS=80.0, IN_USE_ADDRESSES=40.0
    )  # 10 may be made
    gcp = {"project": "fake-project", "apiEndpoint": fake.endpoint}
    defaults = {
        "providers": [{"name": name, "type": "gcp", "gcp": dict(gcp)} for name in ZONES],
        "installation": "it-%s" % uuid.uuid4().hex[:8],
    }
    yield defaults
    fake.clear_faults()
    gone = run_playbook(
        tmp_path,
        [{"name": "absent", PP: dict(POOL, state="absent", spread=FORWARD)}],
        module_defaults=defaults,
    )
    assert gone.rc == 0, gone.stdout[-3000:]
    assert _live(fake) == [], "instances left behind"


def _live(fake) -> list:
    """``(provider, name)`` of every instance not being deleted, by zone."""
    provider_of = {zone: name for name, zone in ZONES.items()}
    with fake.state.lock:
        return sorted(
            (provider_of[zone], name)
            for (zone, name), record in fake.state.instances.items()
            if record["deleting_until"] is None
        )


def _race(tmp_path, fake, defaults, spreads) -> list:
    """Run one pool task per spread at once, every insert held until all runs have listed."""
    hold = threading.Event()
    fake.inject(method="POST", path=r"^zones/[^/]+/instances$", times=-1, hold=hold)
    results = [None] * len(spreads)

    def one(i, spread):
        work = tmp_path / ("run%d" % i)
        work.mkdir(exist_ok=True)
        results[i] = run_playbook(
            work, [{"name": "pool", PP: dict(POOL, spread=spread)}], module_defaults=defaults
        )

    threads = [threading.Thread(target=one, args=(i, s)) for i, s in enumerate(spreads)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    lists = len(spreads) * len(ZONES)  # every run lists each provider once before it creates
    while time.monotonic() < deadline and (
        len(fake.log("GET", r"^aggregated/instances$")) < lists or len(fake.log("POST", r"/instances$")) < 2
    ):
        time.sleep(0.1)
    assert len(fake.log("GET", r"^aggregated/instances$")) == lists, "a run listed again before the inserts"
    time.sleep(0.5)
    fake.clear_faults()
    hold.set()
    for thread in threads:
        thread.join()
    return results


def test_two_unlocked_runs_on_one_pool_end_with_count_members(tmp_path, fake, two_gcp):
    runs = _race(tmp_path, fake, two_gcp, [FORWARD, list(reversed(FORWARD))])
    for run in runs:
        assert run.rc == 0, run.stdout[-3000:]
    live = _live(fake)
    names = [name for _provider, name in live]
    assert len(live) == 6, live  # was 10
    assert len(set(names)) == 6, "a name on both providers: %s" % live  # was four of them
    # The run that listed last reports exactly what is left; the other a pool of 6 too.
    reported = [sorted((m["provider"], m["name"]) for m in run["pool"]["members"]) for run in runs]
    assert live in reported, (live, reported)
    for members in reported:
        assert len(members) == len({name for _p, name in members}) == 6, members
    # What each run made and removed is keyed by provider and name.
    for run in runs:
        for ref in run["pool"]["created"] + run["pool"]["deleted"]:
            assert ref["provider"] in ZONES and ref["name"] == "p3-%d" % ref["slot"], ref
    made = {(r["provider"], r["name"]) for run in runs for r in run["pool"]["created"]}
    removed = {(r["provider"], r["name"]) for run in runs for r in run["pool"]["deleted"]}
    assert made - removed == set(live), (made, removed, live)

    after = run_playbook(
        tmp_path, [{"name": "after", PP: dict(POOL, spread=FORWARD)}], module_defaults=two_gcp
    )
    assert after.rc == 0, after.stdout[-3000:]
    result = after["after"]
    keys = [(m["provider"], m["name"]) for m in result["members"]]
    assert len(keys) == len({name for _p, name in keys}) == 6, keys
    assert sum(1 for provider, _name in keys if provider == "ga") == 4, keys  # the split, 4 and 2
    assert _live(fake) == sorted(keys)
