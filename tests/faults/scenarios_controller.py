"""The controller under crashes: SIGKILLed after the finalizer before the create, after a
create before its status write, after a delete before the finalizer is removed, between the
delete and the create of a replacement, and in the middle of a batch's runner run. After a
restart every Proxy must be Ready with exactly one instance (counted in the local provider's
state directory), nothing latched Permanent, the cloud-init sentinel (from a Secret) nowhere
in the log, status, Events or the controller's files, and no process of the killed run alive."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid

from cluster import kube_testlib
from controller.e2e_lib import GROUP, PLURAL, VERSION, condition
from kubernetes import client as k8s

from faults import playbook_runs, run_marks
from faults.results import Outcome
from faults.scenario import Scenario, no_fault

CONTROLLER = ("controller",)


#: the restarted controller waits for the SIGKILLed one's Lease to expire: 8 s instead of the
#: default 15 s (the recovery time was mostly that wait); renewals every 2 s still get three
#: attempts within the 6 s renew deadline
LEASE = ("--lease-duration", "8", "--renew-deadline", "6")


def secret(env) -> tuple:
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    name = "ci-" + uuid.uuid4().hex[:8]
    user_data = base64.b64encode(("#cloud-config\n# %s\n" % sentinel).encode()).decode()
    k8s.CoreV1Api(env.admin).create_namespaced_secret(
        env.namespace, {"metadata": {"name": name}, "data": {"user-data": user_data}}
    )
    return sentinel, {"provider": "local", "cloudInit": {"secretRef": {"name": name, "key": "user-data"}}}


def uids_on_backend(env) -> list:
    """The uid of every instance in the state directories of both local providers (``local``
    and ``tiny``), read from the instances' own records."""
    found = []
    for state_dir in (env.state_dir, env.state_dir + "-tiny"):
        for name in env.instances(state_dir):
            path = os.path.join(state_dir, "instances", name, "instance.json")
            try:
                with open(path, encoding="utf-8") as handle:
                    found.append(json.load(handle)["proxy-operator-uid"])
            except FileNotFoundError:  # deleted since the listing: not on the backend
                continue
    return found


def run_processes(env) -> list:
    """Processes whose command line names the controller's runner directory (ansible-runner
    started them) or that carry one of its runs' marks (run_marks: forked from its fork
    server, or started by one of its runs)."""
    runner = os.path.join(env.controller.workdir, "runner").encode()
    found = run_marks.run_pids(env.controller.workdir)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as handle:
                    if runner in handle.read() and int(entry) not in found:
                        found.append(int(entry))
            except OSError:
                continue
    return found


def check_after(env, outcome: Outcome, names: list, sentinel: str, preexisting=()) -> None:
    """The invariants once the restarted controller has settled; instances of ``preexisting``
    uids (there before the cell began: an earlier cell's finding) are not this cell's."""
    objs = [env.custom.get_namespaced_custom_object(GROUP, VERSION, env.namespace, PLURAL, n) for n in names]
    uids = [o["metadata"]["uid"] for o in objs]
    on_backend = [u for u in uids_on_backend(env) if u not in preexisting]
    outcome.check(
        ["Proxy uid %s has %d instances" % (u, on_backend.count(u)) for u in uids if on_backend.count(u) != 1]
    )
    outcome.check(["instance of uid %s has no live Proxy" % u for u in on_backend if u not in uids])
    latched = [
        o["metadata"]["name"]
        for o in objs
        for c in (o.get("status") or {}).get("conditions", [])
        if c.get("reason") == "PermanentError" and c.get("status") == "True"
    ]
    outcome.check(["%s latched PermanentError" % n for n in latched])
    texts = {"controller log": env.controller.tail(100000), "status": json.dumps(objs)}
    for name in names:
        texts["events of %s" % name] = repr(env.events(name))
    grep = subprocess.run(
        ["grep", "-rl", sentinel, env.controller.workdir], capture_output=True, text=True, check=False
    )
    texts["files"] = sentinel if grep.stdout else ""
    outcome.check(["the sentinel is in %s" % w for w, t in texts.items() if sentinel in t])


def _finish(env, outcome: Outcome, names: list) -> None:
    """Delete the Proxies, wait for them to go, stop the controller; nothing may be left."""
    for name in names:
        env.delete(name)
    for name in names:
        env.wait_gone(name, timeout=120)
    env.controller.stop()
    outcome.check(["left behind: instance %s" % n for n in env.instances()])
    outcome.check(["left behind: run process %d" % p for p in run_processes(env)])
    if not playbook_runs.wait_for(lambda: not run_marks.fork_servers(env.controller.workdir), 10):
        servers = run_marks.fork_servers(env.controller.workdir)
        outcome.check(["left behind: fork server %d of the stopped controller" % p for p in servers])


def _stop_earlier(env) -> None:
    """Stop a controller an earlier cell left running (the ops part's cells keep theirs for the
    next cell, and pytest-xdist may run that part's file first on this worker): a second one
    would find its ports taken, and the first would hold the Lease."""
    env.controller.stop()
    env.settings = None  # faults/controller_cells.running starts its own again


def _ready_proxy(env, name: str, spec: dict) -> None:
    """``name`` Ready under a controller without faults, which is then stopped."""
    env.controller.start(extra_args=LEASE)
    env.controller.wait_ready()
    env.create(name, spec)
    env.wait_ready(name)
    env.controller.stop()


def _kill_through(env, fault: str, act) -> None:
    """A controller with the fault point ``fault``; ``act()``, then wait for its SIGKILL."""
    env.controller.start(fault=fault, extra_args=LEASE)
    env.controller.wait_ready()
    act()
    kube_testlib.wait_for("the fault's SIGKILL", lambda: env.controller.proc.poll() is not None, 120)
    env.controller._log.close()


def _restart(env) -> float:
    """Start the controller again; returns when the restart began (the recovery's start)."""
    restarted = time.monotonic()
    env.controller.start(extra_args=LEASE)
    env.controller.wait_ready()
    return restarted


def killed_at(fault: str):
    """SIGKILL through the controller's fault point ``after-finalizer``, ``after-create`` or
    ``after-delete``."""

    def flow(env, scenario) -> Outcome:
        outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
        _stop_earlier(env)
        sentinel, spec = secret(env)
        name = "f-" + uuid.uuid4().hex[:8]
        if fault == "after-delete":
            _ready_proxy(env, name, spec)
            _kill_through(env, fault, lambda: env.delete(name))
        else:
            _kill_through(env, fault, lambda: env.create(name, spec))
        restarted = _restart(env)
        if fault == "after-delete":
            env.wait_gone(name, timeout=120)
            outcome.recovery_seconds = round(time.monotonic() - restarted, 2)
            outcome.check(["left behind: instance %s" % n for n in env.instances()])
            _finish(env, outcome, [])
        else:
            env.wait_ready(name, timeout=120)
            outcome.recovery_seconds = round(time.monotonic() - restarted, 2)
            check_after(env, outcome, [name], sentinel)
            _finish(env, outcome, [name])
        outcome.calls = ["killed by fault %s, rc %s" % (fault, "137")]
        return outcome

    return flow


def killed_mid_replacement(env, scenario) -> Outcome:
    """``spec.provider`` moved from ``local`` to ``tiny``; SIGKILL once the old instance's
    delete answered, before the status write and the new create: after the restart the Proxy
    is Ready on ``tiny`` with one instance there and none left on ``local``."""
    outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
    _stop_earlier(env)
    sentinel, spec = secret(env)
    name = "r-" + uuid.uuid4().hex[:8]
    _ready_proxy(env, name, spec)
    _kill_through(env, "after-delete", lambda: env.patch_spec(name, {"provider": "tiny"}))
    killed_with = (len(env.instances()), len(env.instances(env.state_dir + "-tiny")))
    restarted = _restart(env)
    env.wait(
        name,
        lambda o: (
            o != "gone"
            and (o.get("status") or {}).get("provider") == "tiny"
            and condition(o, "Ready").get("status") == "True"
        ),
        "%s Ready on tiny" % name,
        timeout=120,
    )
    outcome.recovery_seconds = round(time.monotonic() - restarted, 2)
    where = (len(env.instances()), len(env.instances(env.state_dir + "-tiny")))
    at_kill = [] if killed_with == (0, 0) else ["instances (local, tiny) at the kill: %s" % (killed_with,)]
    outcome.check(at_kill)
    outcome.check([] if where == (0, 1) else ["instances (local, tiny) after the restart: %s" % (where,)])
    check_after(env, outcome, [name], sentinel)
    _finish(env, outcome, [name])
    outcome.check(["left behind on tiny: instance %s" % n for n in env.instances(env.state_dir + "-tiny")])
    outcome.calls = ["killed by fault after-delete mid-replacement, rc 137"]
    return outcome


def killed_mid_run(env, scenario) -> Outcome:
    """Three Proxies created at once; SIGKILL once the first instance is on the backend."""
    outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
    _stop_earlier(env)
    sentinel, spec = secret(env)
    names = ["m%d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(3)]
    env.controller.start(extra_args=LEASE)
    env.controller.wait_ready()
    for name in names:
        env.create(name, spec)
    playbook_runs.wait_for(lambda: env.instances() != [], 120)
    env.controller.kill()
    survivors = run_processes(env)
    if not playbook_runs.wait_for(lambda: not run_processes(env), 60):
        outcome.check(["run processes alive 60 s after the controller's SIGKILL: %s" % survivors])
    else:
        outcome.check([])
    restarted = time.monotonic()
    env.controller.start(extra_args=LEASE)
    env.controller.wait_ready()
    for name in names:
        env.wait_ready(name, timeout=120)
    outcome.recovery_seconds = round(time.monotonic() - restarted, 2)
    check_after(env, outcome, names, sentinel)
    _finish(env, outcome, names)
    outcome.calls = ["killed with %d run processes alive" % len(survivors)]
    return outcome


SCENARIOS = [
    Scenario(
        "ctl-sigkill-after-finalizer",
        "controller SIGKILLed after the finalizer is written, before the create",
        CONTROLLER,
        no_fault,
        killed_at("after-finalizer"),
    ),
    Scenario(
        "ctl-sigkill-mid-replacement",
        "controller SIGKILLed between the old instance's delete and the new one's create",
        CONTROLLER,
        no_fault,
        killed_mid_replacement,
    ),
    Scenario(
        "ctl-sigkill-after-create",
        "controller SIGKILLed after a create, before its status write",
        CONTROLLER,
        no_fault,
        killed_at("after-create"),
    ),
    Scenario(
        "ctl-sigkill-after-delete",
        "controller SIGKILLed after a delete, before the finalizer is removed",
        CONTROLLER,
        no_fault,
        killed_at("after-delete"),
    ),
    Scenario(
        "ctl-sigkill-mid-run",
        "controller SIGKILLed during a batch's runner run (three Proxies)",
        CONTROLLER,
        no_fault,
        killed_mid_run,
    ),
]
