"""The controller's link to kube-apiserver under faults, and the API server and etcd restarted.

The controller dials the API server through a Toxiproxy link (``env.link_kubeconfig``). Each
cell has one Proxy Ready before the fault and one created just before it (its create in flight
when the fault hits); the fault holds for ``HOLD`` seconds, then heals. Both Proxies must be
Ready again (the first with the same providerID), one instance each, nothing latched, and after
their deletion nothing left. A controller that lost its Lease meanwhile exits by design; the cell
restarts it, as its Deployment would, and says so in its calls.
"""

from __future__ import annotations

import time

from faults.controller_cells import finish, get, names, ready, running, wait_all
from faults.results import Outcome
from faults.scenario import Scenario
from faults.scenarios_controller import secret
from faults.scenarios_network import link_down, toxics
from faults.scenarios_restarts import control_plane_component
from faults.toxiproxy import Toxic

CONTROLLER = ("controller",)
#: how long each fault holds: past the Lease's retry period (2 s), inside its renew deadline
#: (10 s); a renewal cut by the fault may still outlast it, and then the replica exits
HOLD = 5.0


def _api_link(env):
    return env.api_link


def _cluster(env):
    return env.cluster


def link_toxics(*items: Toxic):
    return toxics(*items, link_of=_api_link)


def under_fault(env, scenario) -> Outcome:
    outcome = Outcome(scenario.name, "controller", scenario.description)
    sentinel, spec = secret(env)
    running(env)
    before, during = names("fb"), names("fd")
    for name in before:
        env.create(name, spec)
    wait_all(env, outcome, before, ready, "Ready before the fault")
    ids = {n: (get(env, n).get("status") or {}).get("providerID") for n in before}
    for name in during:
        env.create(name, spec)
    with scenario.inject(env) as injected:
        outcome.faults = injected
        time.sleep(HOLD)
    healed = time.monotonic()
    wait_all(env, outcome, before + during, ready, "Ready after the heal")
    outcome.recovery_seconds = round(time.monotonic() - healed, 2)
    after = {n: (get(env, n).get("status") or {}).get("providerID") for n in before}
    outcome.check(
        ["%s: providerID %s became %s" % (n, ids[n], after[n]) for n in before if ids[n] != after[n]]
    )
    finish(env, outcome, before + during, sentinel)
    return outcome


def _t(name, kind, stream="downstream", **attributes):
    return Toxic(name, kind, stream=stream, attributes=attributes)


SCENARIOS = [
    Scenario(
        "ctl-api-down",
        "the controller's link to kube-apiserver down for 5 s (refused, open connections dropped)",
        CONTROLLER,
        link_down(_api_link),
        under_fault,
    ),
    Scenario(
        "ctl-api-blackhole",
        "the controller's link to kube-apiserver a black hole for 5 s (watches and requests hang)",
        CONTROLLER,
        link_toxics(_t("bh", "timeout", timeout=0)),
        under_fault,
    ),
    Scenario(
        "ctl-api-latency",
        "5 s latency on every answer of kube-apiserver to the controller, for 5 s",
        CONTROLLER,
        link_toxics(_t("lat", "latency", latency=5000)),
        under_fault,
    ),
    Scenario(
        "ctl-api-reset",
        "the controller's connections to kube-apiserver reset as they open, for 5 s",
        CONTROLLER,
        link_toxics(_t("rst", "reset_peer", stream="upstream", timeout=0)),
        under_fault,
    ),
    Scenario(
        "ctl-kube-apiserver-restart",
        "kube-apiserver stopped for 5 s under the controller, restarted (same port, same etcd)",
        CONTROLLER,
        control_plane_component("kube-apiserver", _cluster),
        under_fault,
    ),
    Scenario(
        "ctl-etcd-restart",
        "etcd stopped for 5 s under kube-apiserver and the controller, restarted on its data",
        CONTROLLER,
        control_plane_component("etcd", _cluster),
        under_fault,
    ),
]
