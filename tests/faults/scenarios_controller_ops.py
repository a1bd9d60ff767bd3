"""Operations on a running controller: a run past its timeout, a spec edited while its create
runs, ``spec.provider`` changed, a provider removed from the providers file and re-added, a
Proxy deleted while its create is in flight. Each cell ends with the same invariants as the
crash cells (one instance per Proxy counted in the state directories, nothing latched, no
secret, nothing left once the Proxies are deleted)."""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import time

from contract import pids
from controller.e2e_lib import condition

from faults import playbook_runs
from faults.controller_cells import finish, get, gone, names, ready, run_ids, run_pids, running, wait_all
from faults.results import Outcome
from faults.scenario import Scenario, no_fault
from faults.scenarios_controller import secret, uids_on_backend

CONTROLLER = ("controller",)


def _log_offset(env) -> int:
    return len(env.controller.tail(10**7))


def _logged_since(env, offset: int, text: str) -> bool:
    return text in env.controller.tail(10**7)[offset:]


def run_timeout(env, scenario) -> Outcome:
    """A create's run held past ``--run-timeout`` (the store lock of the local provider held
    by another process, the call deadline longer than the run's): ansible-runner stops it, every
    process of the run is gone by the time it is logged as ended, the Proxy is not latched, and
    Ready once the lock is released. The retry of the create may already run when the timeout is
    seen here: only runs that ended (``--run-log``) are judged."""
    outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
    sentinel, spec = secret(env)
    run_log = os.path.join(env.controller.workdir, "run-timeout-runs.jsonl")
    running(env, extra=("--run-timeout", "6", "--call-timeout", "60", "--run-log", run_log))
    path = os.path.join(env.state_dir, "locks", ".store")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    proxies = names("rt")
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            offset = _log_offset(env)
            env.create(proxies[0], spec)
            seen: dict = {}
            timed_out = playbook_runs.wait_for(
                lambda: seen.update(run_ids(env)) or _logged_since(env, offset, "status=timeout"),
                90,
            )
            outcome.check([] if timed_out else ["no run timed out within 90 s"])
            ended = _ended_runs(run_log)
            judged = [pid for pid, run in seen.items() if run in ended]
            outcome.check([] if judged else ["no process of a timed-out run was ever seen"])
            alive = [p for p in judged if pids.running(p)]
            outcome.check(["process %d of the timed-out run still alive" % p for p in alive])
            obj = get(env, proxies[0])
            outcome.check(
                ["latched PermanentError after the timeout"]
                if condition(obj, "PermanentError").get("status") == "True"
                else []
            )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    healed = time.monotonic()
    wait_all(env, outcome, proxies, ready, "Ready once the lock is released")
    outcome.recovery_seconds = round(time.monotonic() - healed, 2)
    outcome.calls.append(
        "%d run processes seen, %d of ended runs, timed out: %s" % (len(seen), len(judged), timed_out)
    )
    finish(env, outcome, proxies, sentinel)
    return outcome


def _ended_runs(run_log: str) -> set:
    """Run ids with an ``end`` line in ``--run-log`` (written after the run's processes were
    killed)."""
    ended = set()
    with contextlib.suppress(FileNotFoundError), open(run_log, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record.get("what") == "end":
                ended.add(record["run"])
    return ended


def spec_edited_mid_run(env, scenario) -> Outcome:
    """``spec.port`` changed while the Proxy's create runs: it ends Ready on the new spec, with
    one instance, listening on the new port."""
    outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
    sentinel, spec = secret(env)
    running(env)
    proxies = names("se")
    env.create(proxies[0], spec)
    in_flight = playbook_runs.wait_for(lambda: run_pids(env) != [], 60)
    env.patch_spec(proxies[0], {"port": 3130})
    edited = time.monotonic()
    wait_all(
        env,
        outcome,
        proxies,
        lambda o: (
            ready(o) and (o.get("status") or {}).get("observedGeneration") == o["metadata"]["generation"]
        ),
        "Ready on the edited spec",
    )
    outcome.recovery_seconds = round(time.monotonic() - edited, 2)
    ports = [_record(env.state_dir, n).get("port") for n in env.instances()]
    outcome.check([] if ports == [3130] else ["instances' ports after the edit: %s (want [3130])" % ports])
    outcome.calls.append("edited with a run in flight: %s" % in_flight)
    finish(env, outcome, proxies, sentinel)
    return outcome


def _generation(obj: dict) -> int:
    return obj["metadata"]["generation"]


def _record(state_dir: str, name: str) -> dict:
    try:
        with open(os.path.join(state_dir, "instances", name, "instance.json"), encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}


def provider_changed(env, scenario) -> Outcome:
    """``spec.provider`` moved from ``local`` to ``tiny`` (another state directory): the old
    instance deleted where it lived, exactly one on the new provider."""
    outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
    sentinel, spec = secret(env)
    running(env)
    proxies = names("pc")
    env.create(proxies[0], spec)
    wait_all(env, outcome, proxies, ready, "Ready on local")
    first = get(env, proxies[0])["status"]
    env.patch_spec(proxies[0], {"provider": "tiny"})
    changed = time.monotonic()
    wait_all(
        env,
        outcome,
        proxies,
        lambda o: ready(o) and (o.get("status") or {}).get("provider") == "tiny",
        "Ready on tiny",
    )
    outcome.recovery_seconds = round(time.monotonic() - changed, 2)
    where = (len(env.instances()), len(env.instances(env.state_dir + "-tiny")))
    outcome.check([] if where == (0, 1) else ["instances (local, tiny) after the move: %s" % (where,)])
    outcome.check([] if first.get("provider") == "local" else ["first provider %s" % first.get("provider")])
    finish(env, outcome, proxies, sentinel)
    return outcome


def _providers_without(env, name: str) -> dict:
    doc = copy.deepcopy(env.providers)
    doc["providers"] = [p for p in doc["providers"] if p["name"] != name]
    return doc


def _wait_in_use(env, outcome: Outcome, offset: int, listed: list) -> None:
    text = "in use: providers " + ", ".join(listed)
    if not playbook_runs.wait_for(lambda: _logged_since(env, offset, text), 30):
        outcome.check(["the controller never logged %r" % text])


def _not_configured(obj) -> bool:
    return obj is not None and condition(obj, "PermanentError").get("reason") == "ProviderNotConfigured"


def provider_removed(env, scenario) -> Outcome:
    """The ``local`` provider removed from the providers file and re-added: a Proxy with an
    instance there keeps it (never deleted, same providerID), one created meanwhile waits as
    ProviderNotConfigured, and both are Ready once the provider is back."""
    outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
    sentinel, spec = secret(env)
    running(env)
    kept, waiting = names("pk"), names("pw")
    env.create(kept[0], spec)
    wait_all(env, outcome, kept, ready, "Ready before the removal")
    provider_id = get(env, kept[0])["status"]["providerID"]
    before = uids_on_backend(env)
    offset = _log_offset(env)
    env.controller.write_providers(_providers_without(env, "local"))
    try:
        _wait_in_use(
            env, outcome, offset, [p["name"] for p in env.providers["providers"] if p["name"] != "local"]
        )
        env.create(waiting[0], spec)
        wait_all(
            env,
            outcome,
            waiting,
            _not_configured,
            "ProviderNotConfigured while removed",
            60,
        )
        time.sleep(3)  # a few polls of the kept Proxy with its provider missing
        during = uids_on_backend(env)
        outcome.check(
            [] if during == before else ["instances changed while removed: %s -> %s" % (before, during)]
        )
    finally:
        offset = _log_offset(env)
        env.controller.write_providers(env.providers)
    readded = time.monotonic()
    _wait_in_use(env, outcome, offset, [p["name"] for p in env.providers["providers"]])
    wait_all(env, outcome, kept + waiting, ready, "Ready once re-added")
    outcome.recovery_seconds = round(time.monotonic() - readded, 2)
    now = get(env, kept[0])["status"]["providerID"]
    outcome.check([] if now == provider_id else ["providerID %s became %s" % (provider_id, now)])
    finish(env, outcome, kept + waiting, sentinel)
    return outcome


def deleted_in_flight(env, scenario) -> Outcome:
    """A Proxy deleted while its create's run is in flight: once the run ends its instance is
    found and deleted, the Proxy goes, nothing is left."""
    outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
    running(env)
    proxies = names("di")
    env.create(proxies[0], {"provider": "local"})
    in_flight = playbook_runs.wait_for(lambda: run_pids(env) != [], 60)
    env.delete(proxies[0])
    deleted = time.monotonic()
    wait_all(env, outcome, proxies, gone, "gone")
    outcome.recovery_seconds = round(time.monotonic() - deleted, 2)
    outcome.calls.append("deleted with a run in flight: %s" % in_flight)
    outcome.check([] if in_flight else ["no run of the create was seen in flight"])
    left = [u for u in uids_on_backend(env) if u not in env.preexisting]
    outcome.check(["left behind: an instance of uid %s" % u for u in left])
    if not playbook_runs.wait_for(lambda: not run_pids(env), 30):
        outcome.check(["left behind: run process %d" % p for p in run_pids(env)])
    else:
        outcome.check([])
    return outcome


SCENARIOS = [
    Scenario(
        "ctl-run-timeout",
        "a create's run held past --run-timeout (6 s; the store lock held, the call deadline 60 s)",
        CONTROLLER,
        no_fault,
        run_timeout,
    ),
    Scenario(
        "ctl-spec-edited-mid-run",
        "spec.port edited while the Proxy's create runs",
        CONTROLLER,
        no_fault,
        spec_edited_mid_run,
    ),
    Scenario(
        "ctl-provider-changed",
        "spec.provider moved to another provider (another state directory)",
        CONTROLLER,
        no_fault,
        provider_changed,
    ),
    Scenario(
        "ctl-provider-removed",
        "the Proxies' provider removed from the providers file, a Proxy created, then re-added",
        CONTROLLER,
        no_fault,
        provider_removed,
    ),
    Scenario(
        "ctl-deleted-in-flight",
        "a Proxy deleted while its create's run is in flight",
        CONTROLLER,
        no_fault,
        deleted_in_flight,
    ),
]
