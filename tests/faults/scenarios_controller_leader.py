"""The leader paused (SIGSTOP) with a second replica waiting on the same Lease, then resumed.

The standby must take the Lease and reconcile (a Proxy created during the pause becomes Ready);
the resumed leader must exit instead of carrying on, and no two replicas' runs may overlap
(``--run-log`` records every run's start and end with its replica's identity; the per-run
watchdog records when it killed a frozen leader's run). Exactly one instance per Proxy after.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time

from cluster import kube_testlib
from kubernetes import client as k8s

from controller import e2e_lib
from faults import playbook_runs
from faults.controller_cells import finish, names, ready, running, wait_all
from faults.results import Outcome
from faults.scenario import Scenario, no_fault
from faults.scenarios_controller import secret

TIMING = ("--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1")


def identity(proc) -> str:
    return "%s_%d" % (socket.gethostname(), proc.proc.pid)


def holder(env) -> str:
    lease = k8s.CoordinationV1Api(env.admin).read_namespaced_lease(
        env.controller.lease_id, e2e_lib.CONTROLLER_NS
    )
    return lease.spec.holder_identity or ""


def overlaps(run_log: str) -> list:
    """Pairs of runs of two identities whose [start, end] intervals overlap."""
    runs = {}
    if os.path.exists(run_log):
        with open(run_log, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                entry = runs.setdefault(record["run"], {"identity": record["identity"]})
                if record["what"] == "start":
                    entry["start"] = record["time"]
                else:  # "end" (the controller) or "killed" (the watchdog): the first counts
                    entry["end"] = min(entry.get("end", record["time"]), record["time"])
    spans = sorted(
        (r["start"], r.get("end", float("inf")), r["identity"]) for r in runs.values() if "start" in r
    )
    return [
        (x, y)
        for n, x in enumerate(spans)
        for y in spans[n + 1 :]
        if x[2] != y[2] and y[0] < x[1] and x[0] < y[1]
    ]


def leader_paused(env, scenario) -> Outcome:
    outcome = Outcome(scenario.name, "controller", scenario.description, faults=1)
    sentinel, spec = secret(env)
    run_log = os.path.join(env.controller.workdir, "leader-runs-%d.jsonl" % time.time_ns())
    extra = (*TIMING, "--run-log", run_log)
    running(env, extra=extra)
    leader = env.controller
    kube_testlib.wait_for("the first replica leads", lambda: holder(env) == identity(leader), 60)
    standby = e2e_lib.ControllerProcess(
        tempfile.mkdtemp(prefix="standby-", dir=leader.workdir),
        env.link_kubeconfig,
        env.providers,
        env.namespace,
        leader.lease_id,
    )
    standby.start(extra_args=list(extra))
    proxies = names("lp", 2)
    try:
        env.create(proxies[0], spec)
        wait_all(env, outcome, proxies[:1], ready, "Ready under the first leader")
        os.kill(leader.proc.pid, signal.SIGSTOP)
        paused = time.monotonic()
        env.create(proxies[1], spec)
        took = playbook_runs.wait_for(lambda: holder(env) == identity(standby), 60)
        outcome.check([] if took else ["the standby never took the Lease of the paused leader"])
        wait_all(env, outcome, proxies, ready, "Ready under the standby")
        outcome.recovery_seconds = round(time.monotonic() - paused, 2)
        os.kill(leader.proc.pid, signal.SIGCONT)
        exited = playbook_runs.wait_for(lambda: leader.proc.poll() is not None, 30)
        outcome.check([] if exited else ["the resumed leader did not exit within 30 s"])
        outcome.calls.append("resumed leader exited rc %s" % leader.proc.returncode)
        outcome.check(["runs of two replicas overlapped: %s" % o for o in overlaps(run_log)])
        grep = subprocess.run(["grep", "-rl", sentinel, standby.workdir], capture_output=True, check=False)
        outcome.check(["the sentinel is in the standby's %s" % f for f in grep.stdout.decode().split()])
        finish(env, outcome, proxies, sentinel)  # the resumed leader restarted as the new standby
    finally:
        if leader.proc.poll() is None:
            os.kill(leader.proc.pid, signal.SIGCONT)
        rc = standby.stop()
        outcome.check([] if rc == 0 else ["the standby exited %s on SIGTERM" % rc])
    return outcome


SCENARIOS = [
    Scenario(
        "ctl-leader-paused",
        "the leader SIGSTOPped with a second replica waiting, resumed once the standby leads",
        ("controller",),
        no_fault,
        leader_paused,
    ),
]
