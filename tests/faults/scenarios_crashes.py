"""Crashes of a module run: the module process SIGKILLed mid-batch, ``ansible-playbook`` itself
SIGKILLed mid-batch. A rerun of the same batch must finish it with exactly one instance per
uid, and nothing of the killed run may live on or hold the secret."""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid

from contract import pids

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from faults import invariants, playbook_runs
from faults.provider_round import sentinel_cloud_init
from faults.results import Outcome
from faults.scenario import Scenario, no_fault

BATCH = 3
#: every provider with a batch; libvirt's is volumes and domains over SSH (about 14 s a cell)
PLAYBOOK_COLUMNS = ("local", "gcp", "kubernetes", "libvirt")


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def kill_mid_batch(victim: str):
    """The flow: start a batch, SIGKILL ``victim`` ("module" or "playbook") once the first
    instance is on the backend, then rerun the batch, check, delete, check again."""

    def flow(target, scenario) -> Outcome:
        outcome = Outcome(scenario.name, target.column, scenario.description, faults=1)
        sentinel, cloud_init = sentinel_cloud_init()
        uids = ["k%d-%s" % (i, uuid.uuid4().hex) for i in range(BATCH)]
        run_dir = os.path.join(target.backend_dir(), "run-" + uuid.uuid4().hex[:8])
        play = playbook_runs.batch_play(target, uids, cloud_init)
        first = playbook_runs.PlaybookRun(run_dir, play, "killed")
        started = playbook_runs.wait_for(lambda: any(target.uid_counts()[u] for u in uids), 60)
        # the run's own processes, not the proxies it started (local Squids live on by design)
        below = [p for p in first.descendants() if p not in set(target.backend_processes())]
        if victim == "module":
            modules = [p for p in below if b"AnsiballZ" in _cmdline(p) or b"proxy_instance" in _cmdline(p)]
            for pid in modules or below[-1:]:
                _kill(pid)
        else:
            _kill(first.process.pid)
        first.wait(120)
        survivors = [p for p in below if pids.running(p)]
        if not playbook_runs.wait_for(lambda: not [p for p in below if pids.running(p)], 60):
            outcome.check(["%s of the killed run still alive 60 s later: %s" % (victim, survivors)])
            for pid in below:
                _kill(pid)
        else:
            outcome.check([])
        if not started:
            outcome.check(["the batch put nothing on the backend within 60 s: %s" % first.output()[-1500:]])
        healed = time.monotonic()
        rerun = playbook_runs.PlaybookRun(run_dir, play, "rerun")
        rc = rerun.wait(180)
        outcome.recovery_seconds = round(time.monotonic() - healed, 2)
        results = rerun.results()
        failed = [r for r in results if r.get("failed")]
        outcome.check(
            []
            if rc == 0 and len(results) == BATCH and not failed
            else ["rerun rc=%d, failed: %s" % (rc, failed or rerun.output()[-1500:])]
        )
        outcome.check(invariants.one_instance_per_live_uid(target, uids, []))
        outcome.check(invariants.gc_touched_nothing_not_ours(target, []))
        not_found = [t for r in results for t in r.get("telemetry", []) if t.get("class") == "not_found"]
        outcome.check(["a create answered not_found: %s" % not_found] if not_found else [])
        ids = [r.get("id") for r in results if r.get("id")]
        cleanup = playbook_runs.PlaybookRun(
            run_dir, playbook_runs.batch_play(target, uids, "", "absent"), "absent"
        )
        cleanup_rc = cleanup.wait(180)
        for provider_id in ids:  # what the absent run could not remove
            with contextlib.suppress(Exception):
                target.direct.delete(provider_id, Deadline(30))
        outcome.check([] if cleanup_rc == 0 else ["the absent run failed: %s" % cleanup.output()[-1500:]])
        texts = {"run %s" % r.out_path: r.output() for r in (first, rerun, cleanup)}
        texts.update(
            playbook_runs.files_under(os.path.join(run_dir, "ansible-tmp"))
        )  # the plays are our input
        texts["backend"] = target.captured_output()
        outcome.check(invariants.no_secret(sentinel, texts))
        outcome.check(invariants.nothing_left(target, ids))
        outcome.calls = [
            "killed %s after %s" % (victim, "an instance appeared" if started else "60 s"),
            "rerun rc=%d" % rc,
        ]
        return outcome

    return flow


def _cmdline(pid: int) -> bytes:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


SCENARIOS = [
    Scenario(
        "crash-module-sigkill",
        "the module process SIGKILLed mid-batch, then the batch rerun",
        PLAYBOOK_COLUMNS,
        no_fault,
        kill_mid_batch("module"),
    ),
    Scenario(
        "crash-playbook-sigkill",
        "ansible-playbook SIGKILLed mid-batch (its module left running), then the batch rerun",
        PLAYBOOK_COLUMNS,
        no_fault,
        kill_mid_batch("playbook"),
    ),
]
