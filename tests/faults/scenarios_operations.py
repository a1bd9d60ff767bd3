"""Operations faults: a credential file removed under a running provider (a Secret being
rotated), and a providers file broken and then fixed between module runs."""

from __future__ import annotations

import contextlib
import os
import time
import uuid

import yaml

from faults import invariants, playbook_runs
from faults.results import Outcome
from faults.scenario import Scenario, no_fault


def _credential_path(target) -> str:
    if target.column == "kubernetes":
        return os.path.join(str(target.tmp_path), "through-toxiproxy.kubeconfig")
    return target.host.key  # libvirt: the SSH key


@contextlib.contextmanager
def credentials_removed(target):
    """The credential file moved away while the calls run (Transient: it may be mounting),
    then put back."""
    path = _credential_path(target)
    hidden = path + ".rotating"
    os.rename(path, hidden)
    try:
        yield 1
    finally:
        os.rename(hidden, path)


def providers_file_broken(target, scenario) -> Outcome:
    """A batch against a providers file with a bad field fails Permanent naming the field and
    creates nothing; with the file fixed, the same batch creates each instance once."""
    outcome = Outcome(scenario.name, target.column, scenario.description, faults=1)
    run_dir = os.path.join(target.backend_dir(), "ops-" + uuid.uuid4().hex[:8])
    os.makedirs(run_dir)
    path = os.path.join(run_dir, "providers.yaml")
    entry = target.providers_entry()
    broken = dict(entry, local=dict(entry["local"], stateDir="relative/state"))
    uids = ["pf%d-%s" % (i, uuid.uuid4().hex) for i in range(2)]
    play = playbook_runs.batch_play(target, uids, "")
    task = play[0]["tasks"][0][playbook_runs.PI]
    del task["providers"]
    task["providers_file"] = path
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"installation": target.installation, "providers": [broken]}, handle)
    first = playbook_runs.PlaybookRun(run_dir, play, "broken")
    first.wait(120)
    text = first.output()
    named = "providers[0].local.stateDir" in text and "permanent" in text
    outcome.check([] if named else ["the broken file's failure names no field: %s" % text[-800:]])
    outcome.check(invariants.one_instance_per_live_uid(target, [], uids, seconds=0))
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"installation": target.installation, "providers": [entry]}, handle)
    fixed_at = time.monotonic()
    second = playbook_runs.PlaybookRun(run_dir, play, "fixed")
    rc = second.wait(120)
    outcome.recovery_seconds = round(time.monotonic() - fixed_at, 2)
    outcome.check([] if rc == 0 else ["the run with the fixed file failed: %s" % second.output()[-800:]])
    outcome.check(invariants.one_instance_per_live_uid(target, uids, []))
    ids = [r["id"] for r in second.results() if r.get("id")]
    absent = playbook_runs.batch_play(target, uids, "", "absent")
    playbook_runs.PlaybookRun(run_dir, absent, "absent").wait(120)
    outcome.check(invariants.nothing_left(target, ids))
    outcome.calls = ["broken run rc=%d" % first.process.returncode, "fixed run rc=%d" % rc]
    return outcome


SCENARIOS = [
    Scenario(
        "ops-credentials-removed",
        "the credential file (kubeconfig, SSH key) moved away during the calls, then back",
        ("kubernetes", "libvirt"),
        credentials_removed,
    ),
    Scenario(
        "ops-providers-file-broken",
        "the providers file has a bad field for one run, then is fixed",
        ("local",),
        no_fault,
        providers_file_broken,
    ),
]
