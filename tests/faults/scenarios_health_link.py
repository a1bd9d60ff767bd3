"""The health engine <-> proxy link under faults (controller column; ``faults.health_rig``).

Each cell: a Proxy whose instance (a real Squid with auth) sits behind a Toxiproxy link, Healthy
before the fault; probe rounds during the fault, each followed by the reconcile the engine queued
(the manager, the one writer of Healthy and Ready); the link healed; rounds until Healthy again
(the recovery time, from the heal). During the fault the Proxy must be what docs/controller.md
says (unhealthy with the fault's reason and Ready False ``Unhealthy``, or still Healthy for a
link that is only slow), every round back within the probe timeout plus the calls' grace (a
probe bounded by its deadline, not by each read), no ``PermanentError``, the instance read by
the reconciler when unhealthy, the instance untouched (same providerID, no delete asked, one
instance of its uid, its Squid alive), and the password in no status, Event, log line or
Toxiproxy log.
"""

from __future__ import annotations

import json
import threading
import time

from controller.e2e_lib import condition

from faults.calls import OVERRUN_GRACE
from faults.health_rig import PROBE_TIMEOUT, HealthRig
from faults.results import Outcome
from faults.scenario import Scenario
from faults.scenarios_network import link_down, toxics
from faults.target_local import LocalTarget
from faults.toxiproxy import Toxic

CONTROLLER = ("controller",)
#: probe rounds made while the fault holds
ROUNDS = 2
HEALED_WITHIN = 30.0
#: the reasons each fault may give; "Reachable" alone: the link is slow but must still work
EXPECTED = {
    "health-link-down": {"ConnectionRefused"},
    "health-link-blackhole": {"Timeout"},
    "health-link-latency": {"Timeout"},
    "health-link-reset": {"ProxyError", "Unreachable", "ConnectionRefused"},
    "health-link-drip": {"Timeout"},
    "health-link-slicer": {"Reachable"},
    "health-link-trickle": {"Reachable"},
}


def _link(env):
    return env.health_probed.link


def rig(env) -> HealthRig:
    if getattr(env, "health_rig", None) is None:
        env.health_rig = HealthRig(env, env.toxiproxy, env.tmp_factory.mktemp("health-rig"))
        env.exits.callback(env.health_rig.close)
    return env.health_rig


def bounded_round(r: HealthRig, outcome: Outcome, key: str) -> float:
    """One engine round, in a thread given the probe timeout plus the calls' grace; then the
    reconcile it queued (if any) is waited for."""
    box = {}

    def work():
        try:
            r.engine.round()
        except Exception as exc:  # a round must not raise; if it does, that is a violation
            box["error"] = exc

    started = time.monotonic()
    thread = threading.Thread(target=work, daemon=True, name="health-round")
    thread.start()
    thread.join(PROBE_TIMEOUT + OVERRUN_GRACE)
    seconds = time.monotonic() - started
    outcome.calls.append("round %.2f s" % seconds)
    if thread.is_alive():
        outcome.check(["a probe round hung: not back within %.0f s" % (PROBE_TIMEOUT + OVERRUN_GRACE)])
        thread.join(600)
    elif "error" in box:
        outcome.check(["a probe round raised %r" % box["error"]])
    r.settle(key)
    return seconds


def healthy(obj) -> dict:
    return condition(obj, "Healthy")


def _conditions_ok(obj, want: set, unhealthy_expected: bool) -> list:
    health, ready = healthy(obj), condition(obj, "Ready")
    found = []
    if health.get("reason") not in want:
        found.append(
            "Healthy is %s/%s, not one of %s" % (health.get("status"), health.get("reason"), sorted(want))
        )
    if unhealthy_expected and (ready.get("status"), ready.get("reason")) != ("False", "Unhealthy"):
        found.append(
            "Ready is %s/%s under the fault, not False/Unhealthy" % (ready.get("status"), ready.get("reason"))
        )
    latched = [c["type"] for c in obj["status"].get("conditions", []) if c.get("reason") == "PermanentError"]
    found.extend("%s latched PermanentError" % t for t in latched)
    return found


def probed_through_link(env, scenario) -> Outcome:
    outcome = Outcome(scenario.name, "controller", scenario.description)
    r = rig(env)
    probed = env.health_probed = r.start()
    key = r.key(probed)
    try:
        pid_before = r.backend.squid_pids()
        deadline = time.monotonic() + HEALED_WITHIN
        while healthy(r.proxy(probed.name)).get("status") != "True" and time.monotonic() < deadline:
            bounded_round(r, outcome, key)
        outcome.check(_conditions_ok(r.proxy(probed.name), {"Reachable"}, False))
        want = EXPECTED[scenario.name]
        unhealthy = want != {"Reachable"}
        reads = r.reads(key)
        with scenario.inject(env) as injected:
            outcome.faults = injected
            for _round in range(ROUNDS):
                bounded_round(r, outcome, key)
            obj = r.proxy(probed.name)
            outcome.check(_conditions_ok(obj, want, unhealthy))
            if unhealthy:
                read = r.reads(key) > reads
                outcome.check([] if read else ["the reconciler did not read the instance while unhealthy"])
                warned = [e for e in r.events(probed) if e[:2] == ("Warning", "Unhealthy")]
                outcome.check([] if warned else ["no Unhealthy Event while unhealthy"])
        healed = time.monotonic()
        while (
            healthy(r.proxy(probed.name)).get("status") != "True"
            and time.monotonic() < healed + HEALED_WITHIN
        ):
            bounded_round(r, outcome, key)
        outcome.recovery_seconds = round(time.monotonic() - healed, 2)
        after = r.proxy(probed.name)
        outcome.check(_conditions_ok(after, {"Reachable"}, False))
        ready = condition(after, "Ready")
        outcome.check([] if ready.get("status") == "True" else ["Ready is %s after the heal" % ready])
        _check_instance(r, probed, after, pid_before, outcome)
        _check_secret(r, probed, after, outcome)
    finally:
        r.stop(probed)
        env.health_probed = None
    left = [u for _n, u, _i in _records(r) if u]
    outcome.check(["left behind: an instance of uid %s" % u for u in left])
    return outcome


def _records(r: HealthRig) -> list:
    return LocalTarget.records(r)  # reads only r.backend.instances_dir


def _check_instance(r: HealthRig, probed, after: dict, pid_before: list, outcome: Outcome) -> None:
    """Health never touches the instance: same providerID, no delete asked, one instance, its
    Squid alive."""
    status = after.get("status") or {}
    outcome.check(
        []
        if status.get("providerID") == probed.provider_id and status.get("state") == "Running"
        else [
            "status is %s/%s, not Running/%s"
            % (status.get("state"), status.get("providerID"), probed.provider_id)
        ]
    )
    deletes = r.deletes(r.key(probed))
    outcome.check([] if deletes == 0 else ["the reconciler asked %d deletes of the instance" % deletes])
    uids = [u for _n, u, _i in _records(r)]
    outcome.check([] if len(uids) == 1 else ["%d instances on the backend, not 1" % len(uids)])
    outcome.check([] if r.backend.squid_pids() == pid_before else ["the Squid was restarted or killed"])


def _check_secret(r: HealthRig, probed, after: dict, outcome: Outcome) -> None:
    texts = {
        "status": json.dumps(after.get("status")),
        "events": repr(r.events(probed)),
        "controller log": "\n".join(r.log.lines),
        "toxiproxy log": r.env.toxiproxy_log(),
    }
    outcome.check(["the password is in the %s" % w for w, t in texts.items() if probed.password in t])


def _t(name, kind, stream="downstream", **attributes):
    return Toxic(name, kind, stream=stream, attributes=attributes)


def _s(name: str, description: str, inject) -> Scenario:
    return Scenario(name, description, CONTROLLER, inject, probed_through_link)


SCENARIOS = [
    _s("health-link-down", "the health engine's link to a proxy down (probes refused)", link_down(_link)),
    _s(
        "health-link-blackhole",
        "the engine's link to a proxy a black hole: connects, the probe's request swallowed, no answer ever",
        toxics(_t("bh", "timeout", stream="upstream", timeout=0), link_of=_link),
    ),
    _s(
        "health-link-latency",
        "5 s latency on the proxy's answers to the engine, beyond the 2 s probe timeout",
        toxics(_t("lat", "latency", latency=5000), link_of=_link),
    ),
    _s(
        "health-link-reset",
        "the engine's probe connections reset 50 ms into the exchange",
        toxics(_t("rst", "reset_peer", timeout=50), link_of=_link),
    ),
    _s(
        "health-link-drip",
        "the proxy's answer dripped a byte every 200 ms (each read inside the probe timeout)",
        toxics(_t("drip", "slicer", average_size=1, size_variation=0, delay=200000), link_of=_link),
    ),
    _s(
        "health-link-slicer",
        "the proxy's answers sliced into 1-byte packets 0.5 ms apart (must stay Healthy)",
        toxics(_t("sl", "slicer", average_size=1, size_variation=0, delay=500), link_of=_link),
    ),
    _s(
        "health-link-trickle",
        "the proxy's answers trickle at 1 KB/s (must stay Healthy)",
        toxics(_t("bw", "bandwidth", rate=1), link_of=_link),
    ),
]
