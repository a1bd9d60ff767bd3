"""What the controller column's fault and operation cells share: one controller process kept
running across cells while its settings stay the same (a restart costs a Lease hand-over), and
waits that restart it when it exits, as its Deployment would (a replica that lost its Lease
exits by design).

Each cell still creates its own Proxies and deletes them before it ends, so cells stay
independent: the invariants of one cell read only its own Proxies' uids and instances.
"""

from __future__ import annotations

import time
import uuid

from controller.e2e_lib import GROUP, PLURAL, VERSION, condition
from kubernetes.client.exceptions import ApiException

from faults import playbook_runs, run_marks
from faults.results import Outcome
from faults.scenarios_controller import check_after, uids_on_backend


def run_pids(env) -> list:
    """Live processes of the controller's runs (run_marks). The controller itself carries no
    mark, so this holds while it keeps running."""
    return run_marks.run_pids(env.controller.workdir)


def run_ids(env) -> dict:
    """The run id of each live process of the controller's runs, by pid."""
    return run_marks.run_ids(env.controller.workdir)


def running(env, kubeconfig: str = "", extra=()) -> None:
    """The controller running with ``kubeconfig`` (default: the Toxiproxy link's) and ``extra``
    arguments; restarted only when these differ from the running one's or it has exited."""
    # what is on the backend as a cell begins is not the cell's: an earlier cell's leak is
    # reported by that cell, not by every cell after it
    env.preexisting = set(uids_on_backend(env))
    want = (kubeconfig or env.link_kubeconfig, tuple(extra))
    proc = env.controller
    alive = proc.proc is not None and proc.proc.poll() is None
    if alive and getattr(env, "settings", None) == want:
        return
    if alive:
        proc.stop()
    proc.kubeconfig = want[0]
    proc.start(extra_args=list(want[1]))
    env.settings = want
    proc.wait_ready(120)


def get(env, name: str):
    try:
        return env.custom.get_namespaced_custom_object(GROUP, VERSION, env.namespace, PLURAL, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _restart_if_exited(env, outcome: Outcome) -> None:
    proc = env.controller.proc
    if proc is not None and proc.poll() is not None:
        outcome.calls.append("controller exited rc %s, restarted" % proc.returncode)
        env.controller._log.close()
        env.controller.start(extra_args=list(env.settings[1]))


def wait_all(env, outcome: Outcome, names: list, predicate, what: str, seconds: float = 120) -> bool:
    """Wait until ``predicate(obj)`` holds for every Proxy of ``names`` (``None``: gone),
    restarting the controller whenever it exits; False (and a violation) at the bound."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        _restart_if_exited(env, outcome)
        try:
            if all(predicate(get(env, n)) for n in names):
                return True
        except ApiException:  # the API server itself may be restarting
            pass
        time.sleep(0.3)
    states = {n: (get(env, n) or {}).get("status") for n in names}
    outcome.check(["%s not reached within %.0f s: %s" % (what, seconds, states)])
    return False


def ready(obj) -> bool:
    return obj is not None and condition(obj, "Ready").get("status") == "True"


def gone(obj) -> bool:
    return obj is None


def names(prefix: str, count: int = 1) -> list:
    return ["%s%d-%s" % (prefix, i, uuid.uuid4().hex[:6]) for i in range(count)]


def _cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")[:300]
    except OSError:
        return "(gone)"


def finish(env, outcome: Outcome, proxies: list, sentinel: str) -> None:
    """The invariants on ``proxies`` (Ready), then delete them: nothing of theirs may be left,
    on the backend or among the runs' processes. The controller keeps running for the next cell."""
    check_after(env, outcome, proxies, sentinel, env.preexisting)
    uids = {n: ((get(env, n) or {}).get("metadata") or {}).get("uid") for n in proxies}
    outcome.calls.append("uids: %s" % uids)
    for name in proxies:
        env.delete(name)
    wait_all(env, outcome, proxies, gone, "deleted")
    left = [u for u in uids_on_backend(env) if u not in env.preexisting]
    outcome.check(["left behind: an instance of uid %s" % u for u in left])
    if not playbook_runs.wait_for(lambda: not run_pids(env), 30):
        outcome.check(["left behind: run process %d %s" % (p, _cmdline(p)) for p in run_pids(env)])
    else:
        outcome.check([])
