"""A providers-file mistake never latches the fleet (issue 14), on the real test API server.

Two local Proxies become Ready; then the file is broken in each of the ways people break it
(invalid YAML, an unknown key, a removed provider, a non-UTF-8 byte), each for longer than a
Running poll, and fixed again. Watching the Proxies all along: none ever gets PermanentError,
each keeps its providerID, none gets a Warning Event, and none loses Ready but to say, while the
file lacks the provider that made it, Ready=Unknown (ProviderNotConfigured: issue 40 §6; True
again once the provider is back); the controller reports each problem once, on its Lease and
on /readyz, naming the file (a removed provider that made instances as ProvidersMissing).

A controller started before its providers file exists (or while it is invalid) runs no orphan
GC sweep until a version is valid: each round waits with an INFO line, never a failed run
logged at ERROR with a traceback (issue 31); the first valid version is swept with.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request

import pytest
import yaml
from cluster import kube_testlib
from kubernetes import client as k8s

from . import e2e_lib, test_e2e
from .e2e_lib import GROUP, PLURAL, VERSION, condition
from .hostile_files import SENTINEL, leaks

pytestmark = [pytest.mark.squid]
controller_api = e2e_lib.controller_api
e2e = test_e2e.e2e
RUNNING_POLL = 3.0  # the harness's --running-poll
# A sweep every second from 1 s after start (the scoped test controller sweeps only when the
# installation is its own).
GC_FLAGS = ["--gc-interval", "1", "--gc-jitter", "0", "--gc-own-installation"]
GC_WAITS = "gc: no valid providers file yet"


class Watcher:
    """Reads the Proxies every 0.2 s and records every status they show."""

    def __init__(self, e2e, names):
        self.e2e, self.names, self.seen = e2e, names, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.2):
            for name in self.names:
                obj = self.e2e.custom.get_namespaced_custom_object(
                    GROUP, VERSION, self.e2e.namespace, PLURAL, name
                )
                self.seen.append((name, json.loads(json.dumps(obj.get("status") or {}))))

    def stop(self):
        self._stop.set()
        self._thread.join(10)


def _readyz(e2e) -> str:
    url = "http://127.0.0.1:%d/readyz" % e2e.controller.health_port
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.read().decode()


def _ready(e2e, name: str) -> tuple:
    """(status, reason, message) of a Proxy's Ready condition."""
    obj = e2e.custom.get_namespaced_custom_object(GROUP, VERSION, e2e.namespace, PLURAL, name)
    ready = condition(obj, "Ready")
    return ready.get("status"), ready.get("reason"), ready.get("message")


def _lease_events(e2e) -> list:
    items = (
        k8s.CoreV1Api(e2e.admin)
        .list_namespaced_event(
            e2e_lib.CONTROLLER_NS, field_selector="involvedObject.name=%s" % e2e.controller.lease_id
        )
        .items
    )
    return [(e.reason, e.message) for e in items]


def test_a_broken_providers_file_latches_nothing_and_heals_by_itself(e2e):
    names = ("cfg-a", "cfg-b")
    for name in names:
        e2e.create(name, {"provider": "local"})
    ids = {name: e2e.wait_ready(name)["status"]["providerID"] for name in names}
    good = yaml.safe_dump(e2e.providers).encode()
    without_local = dict(
        e2e.providers, providers=[p for p in e2e.providers["providers"] if p["name"] != "local"]
    )
    unknown_key = json.loads(json.dumps(e2e.providers))
    unknown_key["providers"][0]["local"]["colour"] = "blue"  # only the modules' schema knows
    breakages = [
        ("invalid YAML", b"providers: [\n  - name: local\n", "not valid YAML"),
        ("unknown key", yaml.safe_dump(unknown_key).encode(), "colour"),
        ("removed provider", yaml.safe_dump(without_local).encode(), "no provider 'local'"),
        ("non-UTF-8 byte", good.replace(b"installation", b"installation\xff", 1), "not UTF-8"),
    ]
    watcher = Watcher(e2e, names)
    try:
        for what, data, problem in breakages:
            with open(e2e.controller.providers_file + ".tmp", "wb") as handle:
                handle.write(data)
            os.replace(e2e.controller.providers_file + ".tmp", e2e.controller.providers_file)
            if problem:
                kube_testlib.wait_for(
                    "%s reported on /readyz" % what, lambda p=problem: p in _readyz(e2e), timeout=30
                )
                kube_testlib.wait_for(
                    "%s reported as an Event" % what,
                    lambda p=problem: any(
                        r in ("ProvidersFileInvalid", "ProvidersMissing") and p in m
                        for r, m in _lease_events(e2e)
                    ),
                    timeout=30,
                )
            if what == "removed provider":  # the Proxies' own Ready says it too
                for name in names:
                    kube_testlib.wait_for(
                        "%s's Ready says its provider is not configured" % name,
                        lambda n=name: _ready(e2e, n)[:2] == ("Unknown", "ProviderNotConfigured"),
                        timeout=30,
                    )
            time.sleep(2 * RUNNING_POLL)  # polls come due while the file is broken
            e2e.controller.write_providers(e2e.providers)
            kube_testlib.wait_for(
                "fixed file in use", lambda: "providers file:" not in _readyz(e2e), timeout=30
            )
        time.sleep(2 * RUNNING_POLL)
    finally:
        watcher.stop()
    assert watcher.seen, "the watcher read nothing"
    for name, status in watcher.seen:
        assert status.get("providerID") == ids[name], (name, status)
        ready = condition({"status": status}, "Ready")
        assert (ready.get("status"), ready.get("reason")) in (
            ("True", "Running"),
            ("Unknown", "ProviderNotConfigured"),
        ), (name, status)
        assert condition({"status": status}, "PermanentError").get("status") != "True", (name, status)
    for name in names:
        assert [r for r, _m in e2e.events(name) if r not in ("Created", "Ready")] == []
        assert e2e.wait_ready(name)["status"]["providerID"] == ids[name]
        assert _ready(e2e, name)[:2] == ("True", "Running")
    reports = [m for r, m in _lease_events(e2e) if r == "ProvidersFileInvalid"]
    assert len(reports) == 3 and all(e2e.controller.providers_file in m for m in reports)
    assert [r for r, _m in _lease_events(e2e)].count("ProvidersMissing") == 1
    assert "egress_proxies_providers_file_error 0.0" in e2e.controller.metrics()


@pytest.fixture
def unconfigured(controller_api, kube_cluster, kube_namespace, tmp_path):
    """An environment whose providers file does not exist yet (the controller is not started)."""
    env = test_e2e.E2E(controller_api, kube_cluster, kube_namespace, tmp_path)
    os.unlink(env.controller.providers_file)
    try:
        yield env
    finally:
        env.cleanup()


def _gc_rounds(log: str) -> int:
    """Orphan GC rounds that found no valid providers file (waited, or failed before issue 31)."""
    return log.count(GC_WAITS) + log.count("orphan-gc round failed")


def test_the_orphan_gc_waits_for_a_valid_providers_file(unconfigured):
    env = unconfigured

    def log() -> str:
        return env.controller.tail(100000)

    env.controller.start(extra_args=GC_FLAGS)
    kube_testlib.wait_for("GC rounds with no file", lambda: _gc_rounds(log()) >= 1, timeout=30)
    with open(env.controller.providers_file, "w") as handle:
        handle.write("providers: [\n")  # present, not valid
    kube_testlib.wait_for("the invalid file reported", lambda: "not valid YAML" in log(), timeout=30)
    rounds = _gc_rounds(log())
    kube_testlib.wait_for(
        "GC rounds with an invalid file", lambda: _gc_rounds(log()) >= rounds + 1, timeout=30
    )
    assert "runner run gc.yml" not in log()
    env.controller.write_providers(env.providers)
    env.controller.wait_ready()
    kube_testlib.wait_for("a sweep", lambda: "runner run gc.yml status=successful" in log(), timeout=60)
    text = log()
    errors = [
        line for line in text.splitlines() if " ERROR " in line and "providers file problem:" not in line
    ]
    assert (errors, "Traceback" in text, "RunFailed" in text) == ([], False, False), text
    assert GC_WAITS in text


LIVENESS = 5.0  # seconds: a loop blocked longer turns /healthz unhealthy


@pytest.fixture
def lively(controller_api, kube_cluster, kube_namespace, tmp_path):
    """The e2e controller with a short liveness timeout, so a blocked loop shows on /healthz."""
    env = test_e2e.E2E(controller_api, kube_cluster, kube_namespace, tmp_path)
    yield from test_e2e.started(env, ["--liveness-timeout", str(LIVENESS)])


def _healthz(e2e) -> int:
    url = "http://127.0.0.1:%d/healthz" % e2e.controller.health_port
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _in_use(e2e, name: str) -> None:
    """A Proxy made Ready: a good version of the file is in use."""
    e2e.create(name, {"provider": "local"})
    e2e.wait_ready(name)


def test_a_token_in_a_broken_file_reaches_no_output(lively):
    """Issue 40 §1 on the running controller: a YAML mistake on the line of a kubernetes apiKey
    is reported on /readyz, in the log and as the Lease Event with its position only."""
    e2e = lively
    path = e2e.controller.providers_file
    _in_use(e2e, "before")
    leaky = {"name": "leaky", "type": "kubernetes", "kubernetes": {"apiKey": "KEY"}}
    text = yaml.safe_dump(dict(e2e.providers, providers=[*e2e.providers["providers"], leaky]))
    broken = text.replace("apiKey: KEY", "apiKey: %s x: y" % SENTINEL).encode()
    with open(path + ".tmp", "wb") as handle:
        handle.write(broken)
    os.replace(path + ".tmp", path)
    kube_testlib.wait_for("the mistake on /readyz", lambda: "not valid YAML" in _readyz(e2e), timeout=30)
    kube_testlib.wait_for(
        "the mistake as an Event",
        lambda: any(r == "ProvidersFileInvalid" and "line" in m for r, m in _lease_events(e2e)),
        timeout=30,
    )
    readyz, events, log = _readyz(e2e), repr(_lease_events(e2e)), e2e.controller.tail(100000)
    assert (leaks(readyz), leaks(events), leaks(log)) == (False, False, False), readyz
    for seen in (readyz, events, log):
        assert "mapping values are not allowed here (line" in seen
    assert "the last good version stays in use" in events


def test_a_fifo_at_the_providers_file_blocks_nothing(lively):
    """Issue 40 §4 on the running controller: a FIFO put at --providers-file is refused without
    blocking the loop (/healthz stays 200 for three liveness timeouts, a new Proxy becomes Ready
    on the last good version), and the fixed file is taken."""
    e2e = lively
    path = e2e.controller.providers_file
    _in_use(e2e, "before")
    os.unlink(path)
    os.mkfifo(path)
    try:
        kube_testlib.wait_for("the FIFO on /readyz", lambda: "it is a FIFO" in _readyz(e2e), timeout=30)
        e2e.create("after-fifo", {"provider": "local"})
        deadline = time.monotonic() + 3 * LIVENESS
        while time.monotonic() < deadline:
            assert _healthz(e2e) == 200, e2e.controller.tail(200)
            time.sleep(0.5)
        e2e.wait_ready("after-fifo")
    finally:
        os.unlink(path)
        e2e.controller.write_providers(e2e.providers)
    kube_testlib.wait_for("fixed file in use", lambda: "providers file:" not in _readyz(e2e), timeout=30)
