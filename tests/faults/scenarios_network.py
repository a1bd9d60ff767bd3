"""Network faults through Toxiproxy between each provider's client and its backend (the
kube-apiserver, sshd in front of libvirtd, the Compute Engine fake)."""

from __future__ import annotations

import contextlib
import time

from faults.scenario import Scenario
from faults.toxiproxy import Toxic

NETWORKED = ("gcp", "kubernetes", "libvirt")


def _link(target):
    return target.link


def toxics(*items: Toxic, link_of=_link):
    """Inject: the toxics added to the target's link (``link_of(target)``), removed at heal."""

    @contextlib.contextmanager
    def inject(target):
        link = link_of(target)
        for toxic in items:
            link.add(toxic)
        try:
            yield len(items)
        finally:
            link.heal()

    return inject


def link_down(link_of=_link):
    """Inject: the link refuses connections and drops the open ones (the pooled one too)."""

    @contextlib.contextmanager
    def inject(target):
        link_of(target).set_enabled(False)
        try:
            yield 1
        finally:
            link_of(target).heal()

    return inject


down = link_down()


@contextlib.contextmanager
def flapping(target):
    """Down and up again four times while the calls run (a background flipper)."""
    import threading

    stop = threading.Event()

    def flip():
        while not stop.is_set():
            target.link.set_enabled(False)
            time.sleep(0.4)
            target.link.set_enabled(True)
            time.sleep(0.6)

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        yield 4
    finally:
        stop.set()
        thread.join(5)
        target.link.heal()


def _t(name, kind, stream="downstream", **attributes):
    return Toxic(name, kind, stream=stream, attributes=attributes)


#: the cheaper columns for the extra variants (libvirt's round costs several times more)
HTTP = ("gcp", "kubernetes")

SCENARIOS = [
    Scenario("net-down", "link down: connections refused, open ones dropped", NETWORKED, down),
    Scenario("net-flapping", "link down and up every second during the calls", NETWORKED, flapping),
    Scenario(
        "net-blackhole",
        "black hole: data accepted, nothing ever answered (timeout 0)",
        NETWORKED,
        toxics(_t("bh", "timeout", timeout=0)),
    ),
    Scenario(
        "net-blackhole-upstream",
        "requests swallowed on the way to the backend",
        NETWORKED,
        toxics(_t("bhu", "timeout", stream="upstream", timeout=0)),
    ),
    Scenario(
        "net-latency",
        "5 s latency on every answer, beyond the 3 s call deadline",
        NETWORKED,
        toxics(_t("lat", "latency", latency=5000)),
    ),
    Scenario(
        "net-latency-jitter",
        "1-3 s latency with jitter on both directions (near the deadline)",
        NETWORKED,
        toxics(
            _t("latd", "latency", latency=1500, jitter=1000), _t("latu", "latency", "upstream", latency=500)
        ),
    ),
    Scenario("net-trickle", "answers trickle at 1 KB/s", NETWORKED, toxics(_t("bw", "bandwidth", rate=1))),
    Scenario(
        "net-reset-mid-response",
        "connection reset 100 ms into each answer",
        NETWORKED,
        toxics(_t("rst", "reset_peer", timeout=100)),
    ),
    Scenario(
        "net-reset-request",
        "connection reset as soon as a request is sent",
        NETWORKED,
        toxics(_t("rstu", "reset_peer", stream="upstream", timeout=0)),
    ),
    Scenario(
        "net-truncated",
        "each connection closed after 600 bytes of answer (a truncated body)",
        NETWORKED,
        toxics(_t("cut", "limit_data", bytes=600)),
    ),
    Scenario(
        "net-slicer",
        "answers sliced into 1-byte packets 0.5 ms apart (must still work, slowly)",
        NETWORKED,
        toxics(_t("slice", "slicer", average_size=1, size_variation=0, delay=500)),
    ),
    Scenario(
        "net-close-after-1s",
        "every connection closed after 1 s, mid-exchange",
        NETWORKED,
        toxics(_t("to", "timeout", timeout=1000)),
    ),
    Scenario(
        "net-latency-under-deadline",
        "1 s latency on every answer, inside the deadline: everything must still work",
        HTTP,
        toxics(_t("lat1", "latency", latency=1000)),
    ),
    Scenario(
        "net-latency-upstream",
        "5 s latency on every request, beyond the deadline",
        HTTP,
        toxics(_t("latu5", "latency", "upstream", latency=5000)),
    ),
    Scenario(
        "net-reset-some",
        "a third of the connections reset as they open",
        HTTP,
        toxics(Toxic("rst30", "reset_peer", toxicity=0.33, attributes={"timeout": 0})),
    ),
    Scenario(
        "net-request-cut",
        "each connection closed after 200 bytes of request",
        HTTP,
        toxics(_t("cutu", "limit_data", "upstream", bytes=200)),
    ),
    Scenario(
        "net-slow-close",
        "connections closed 4 s late after the backend closed them",
        HTTP,
        toxics(_t("sc", "slow_close", delay=4000)),
    ),
]
