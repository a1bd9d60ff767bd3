"""``proxy_pool`` where providers share a backend, and two runs on one pool at once (issue 28
§2, §3), through real ``ansible-playbook`` runs on local providers (real Squid).

Two local providers may share a ``stateDir`` (docs/local-provider.md): each instance then
belongs to the provider that made it (recorded in its ``instance.json``) and is listed by that
provider only, so a pool over both never sees its members twice and never deletes one it counts
as live. Two runs on one pool at once take the pool's lock on each provider's state, so the
second starts from what the first left and the pool ends with ``count`` members.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
import uuid

import pytest

from .local_env import instance_dirs, squid_pids
from .playbook import run_playbook
from .test_pool_local import PI, PP, _ranges

pytestmark = [pytest.mark.squid, pytest.mark.playbook]


def _providers(tmp_path, layout: dict) -> list:
    """One local provider per ``layout`` entry (name -> stateDir name), each its own range."""
    ranges = _ranges(len(layout))
    return [
        {"name": name, "type": "local", "local": {"stateDir": str(tmp_path / state), "addressRange": rng}}
        for (name, state), rng in zip(layout.items(), ranges, strict=True)
    ]


def _cleanup(tmp_path, defaults: dict, layout: dict) -> None:
    """Delete whatever is left, by id, through the provider recorded in each instance (or the
    first provider of that stateDir for an instance without one); assert no Squid is left."""
    tasks = []
    for state in sorted(set(layout.values())):
        for name in instance_dirs(tmp_path / state):
            record = json.loads((tmp_path / state / "instances" / name / "instance.json").read_text())
            owner = record.get("proxy-operator-provider") or next(p for p, s in layout.items() if s == state)
            tasks.append(
                {
                    "name": "cleanup %s" % name,
                    PI: {
                        "provider": owner,
                        "state": "absent",
                        "force": True,
                        "instances": [{"id": "local/" + name}],
                    },
                    "ignore_errors": True,
                }
            )
    if tasks:
        run_playbook(tmp_path, tasks, module_defaults=defaults)
    for state in set(layout.values()):
        assert squid_pids(tmp_path / state) == [], "Squid left running"


def _local_providers(tmp_path, layout: dict):
    """A fixture body: module defaults for the providers of ``layout``; whatever is left is
    deleted at teardown."""
    defaults = {"providers": _providers(tmp_path, layout), "installation": "it-%s" % uuid.uuid4().hex[:8]}
    yield defaults
    _cleanup(tmp_path, defaults, layout)


@pytest.fixture
def shared(tmp_path):
    """Two local providers on one stateDir."""
    yield from _local_providers(tmp_path, {"ls1": "shared", "ls2": "shared"})


@pytest.fixture
def apart(tmp_path):
    """Two local providers, each on its own stateDir."""
    yield from _local_providers(tmp_path, {"la": "la", "lb": "lb"})


def test_two_providers_on_one_state_dir_keep_the_pool_across_runs(tmp_path, shared):
    """Issue 28 §2: run 2 used to delete both members (each listed under both providers)."""
    args = {"pool": "ps", "count": 2, "spread": [{"provider": "ls1"}, {"provider": "ls2"}]}
    run = run_playbook(
        tmp_path,
        [{"name": "run %d" % i, PP: args} for i in (1, 2, 3)],
        module_defaults=shared,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert [(r["provider"], r["name"]) for r in run["run 1"]["created"]] == [("ls1", "ps-0"), ("ls2", "ps-1")]
    for later in ("run 2", "run 3"):
        assert run[later]["changed"] is False, run[later]
        assert run[later]["deleted"] == [] and run[later]["created"] == []
        assert sorted((m["provider"], m["name"]) for m in run[later]["members"]) == [
            ("ls1", "ps-0"),
            ("ls2", "ps-1"),
        ]
    assert instance_dirs(tmp_path / "shared") == ["ps-0", "ps-1"]
    for name, provider in (("ps-0", "ls1"), ("ps-1", "ls2")):
        record = json.loads((tmp_path / "shared" / "instances" / name / "instance.json").read_text())
        assert record["proxy-operator-provider"] == provider


def test_an_instance_made_before_providers_were_recorded_is_kept_once(tmp_path, shared):
    """An instance without a recorded provider (made before this change) is listed by every
    provider of its stateDir; the pool counts it on its target's provider and never deletes it
    through the other's view."""
    args = {"pool": "ps", "count": 2, "spread": [{"provider": "ls1"}, {"provider": "ls2"}]}
    first = run_playbook(tmp_path, [{"name": "make", PP: args}], module_defaults=shared)
    assert first.rc == 0, first.stdout[-3000:]
    for name in ("ps-0", "ps-1"):
        path = tmp_path / "shared" / "instances" / name / "instance.json"
        record = json.loads(path.read_text())
        record.pop("proxy-operator-provider", None)
        path.write_text(json.dumps(record))
    again = run_playbook(tmp_path, [{"name": "again", PP: args}], module_defaults=shared)
    assert again.rc == 0, again.stdout[-3000:]
    result = again["again"]
    assert result["deleted"] == [] and result["created"] == [], result
    assert sorted((m["provider"], m["name"]) for m in result["members"]) == [("ls1", "ps-0"), ("ls2", "ps-1")]
    assert instance_dirs(tmp_path / "shared") == ["ps-0", "ps-1"]


def _openers(paths) -> int:
    """How many processes have one of ``paths`` open (a run waiting on, or holding, a lock)."""
    wanted = {str(p) for p in paths}
    count = 0
    for proc in os.listdir("/proc"):
        if not proc.isdigit():
            continue
        try:
            fds = os.listdir("/proc/%s/fd" % proc)
            if any(os.readlink("/proc/%s/fd/%s" % (proc, fd)) in wanted for fd in fds):
                count += 1
        except OSError:
            continue
    return count


@contextlib.contextmanager
def _store_locks_held(state_dirs):
    """Hold the local stores' own lock, so every create waits: both runs list the pool before
    either creates (the window a real race hits by chance made certain)."""
    handles = []
    try:
        for state_dir in state_dirs:
            (state_dir / "locks").mkdir(parents=True, exist_ok=True)
            (state_dir / "instances").mkdir(parents=True, exist_ok=True)
            handle = open(state_dir / "locks" / ".store", "a")  # noqa: SIM115 - held across the block
            fcntl.flock(handle, fcntl.LOCK_EX)
            handles.append(handle)
        yield
    finally:
        for handle in handles:
            handle.close()


def _concurrent(tmp_path, defaults, spreads) -> list:
    results = [None] * len(spreads)

    def one(i, spread):
        work = tmp_path / ("run%d" % i)
        work.mkdir(exist_ok=True)
        task = {"name": "pool", PP: {"pool": "p3", "count": 6, "spread": spread, "timeout": 120}}
        results[i] = run_playbook(work, [task], module_defaults=defaults)

    threads = [threading.Thread(target=one, args=(i, s)) for i, s in enumerate(spreads)]
    locks = [tmp_path / "la" / "locks" / ".store", tmp_path / "la" / "locks" / ".pool-p3"]
    with _store_locks_held([tmp_path / "la", tmp_path / "lb"]):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 90
        # Both runs are past their list (waiting on the store lock) or waiting on the pool's.
        while _openers(locks) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
    for thread in threads:
        thread.join()
    return results


def test_two_concurrent_runs_on_one_pool_end_with_count_members(tmp_path, apart):
    """Issue 28 §3: two runs at once (spreads in opposite order) used to leave 8-10 instances
    and a name on both providers."""
    forward = [{"provider": "la", "weight": 2}, {"provider": "lb", "weight": 1}]
    runs = _concurrent(tmp_path, apart, [forward, list(reversed(forward))])
    for run in runs:
        # Each run either succeeded or failed with a clear lock error and changed nothing.
        if run.rc != 0:
            assert "lock" in run.stdout and "p3" in run.stdout, run.stdout[-3000:]
    assert any(run.rc == 0 for run in runs), [r.stdout[-2000:] for r in runs]
    on_a, on_b = instance_dirs(tmp_path / "la"), instance_dirs(tmp_path / "lb")
    assert len(on_a) + len(on_b) == 6, (on_a, on_b)
    assert not set(on_a) & set(on_b), "a name on both providers: %s" % (set(on_a) & set(on_b))
    final = run_playbook(
        tmp_path,
        [{"name": "after", PP: {"pool": "p3", "count": 6, "spread": forward}}],
        module_defaults=apart,
    )
    assert final.rc == 0, final.stdout[-3000:]
    result = final["after"]
    assert result["changed"] is False and result["deleted"] == [], result
    keys = [(m["provider"], m["name"]) for m in result["members"]]
    assert len(keys) == len(set(keys)) == 6
    assert sum(1 for p, _n in keys if p == "la") == 4


def test_members_are_keyed_by_provider_and_name(tmp_path, apart):
    """Issue 28 §3: with one name on two providers (what the race left), ``members`` used to
    list one of them twice (the same uid under both) and omit the other; each member is now
    reported from its own result. And the run leaves the name on one provider only: the other
    copy goes and its target gets a member under a free name (both copies were kept before)."""
    forward = [{"provider": "la", "weight": 2}, {"provider": "lb", "weight": 1}]
    made = run_playbook(
        tmp_path,
        [
            {"name": "on la", PI: {"provider": "la", "uid": "pool_p3_la_5", "name": "p3-5"}},
            {"name": "on lb", PI: {"provider": "lb", "uid": "pool_p3_lb_5", "name": "p3-5"}},
            {"name": "pool", PP: {"pool": "p3", "count": 6, "spread": forward}},
        ],
        module_defaults=apart,
    )
    assert made.rc == 0, made.stdout[-3000:]
    result = made["pool"]
    keys = [(m["provider"], m["name"]) for m in result["members"]]
    assert len(keys) == len(set(keys)) == 6, keys
    for member in result["members"]:
        assert member["uid"] == "pool_p3_%s_%d" % (member["provider"], member["slot"]), member
    assert len({m["name"] for m in result["members"]}) == 6, keys
    # The copy that went is named with its provider: the one not among the members.
    gone = [(r["provider"], r["name"]) for r in result["deleted"] if r["name"] == "p3-5"]
    assert len(gone) == 1 and gone[0] not in keys, result
    on_a, on_b = instance_dirs(tmp_path / "la"), instance_dirs(tmp_path / "lb")
    assert not set(on_a) & set(on_b) and len(on_a) + len(on_b) == 6, (on_a, on_b)
