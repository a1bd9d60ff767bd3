"""Two leaders never act at once (issue 14): several controller processes on one Lease, on the
real test API server, reconciling real local Proxies while the leader is frozen (SIGSTOP) and
resumed, SIGTERMed mid-run, and cut off from the API server (its own connection only).

Every run's start and end is recorded with the identity that ran it (``--run-log``; the per-run
watchdog records when it killed a run of a frozen or cut-off leader). The test checks that no two
runs of different identities ever overlap, that every takeover happened, and that a leader that
lost the Lease exited instead of carrying on.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import pytest
from cluster import kube_testlib
from kubernetes import client as k8s

from . import e2e_lib
from .e2e_lib import GROUP, PLURAL, VERSION, condition, proxy_body
from .test_e2e import E2E

pytestmark = [pytest.mark.squid]
controller_api = e2e_lib.controller_api
TIMING = ["--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1"]


class Forwarder:
    """A loopback TCP forwarder to the API server that the test can cut (then it holds every
    connection open and forwards nothing: requests hang, as over a dead network)."""

    def __init__(self, upstream_port: int):
        self.upstream = upstream_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.is_cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            if self.is_cut.is_set():
                threading.Thread(target=self._swallow, args=(conn,), daemon=True).start()
                continue
            up = socket.create_connection(("127.0.0.1", self.upstream))
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if not self.is_cut.is_set():
                    dst.sendall(data)
        except OSError:
            pass

    def _swallow(self, conn):
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass

    def cut(self):
        self.is_cut.set()

    def close(self):
        self.sock.close()


def _kubeconfig_via(path: str, forwarder: Forwarder, out: str) -> str:
    with open(path) as handle:
        doc = json.load(handle)
    doc["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:%d" % forwarder.port
    with open(out, "w") as handle:
        json.dump(doc, handle)
    return out


class Fleet:
    def __init__(self, e2e: E2E, tmp_path, kube_cluster):
        self.e2e, self.tmp_path = e2e, tmp_path
        self.lease_id = e2e.controller.lease_id
        self.run_log = str(tmp_path / "runs.jsonl")
        self.procs = []
        self.upstream = int(kube_cluster.server.rsplit(":", 1)[1])

    def start(self, name: str, kubeconfig: str | None = None) -> e2e_lib.ControllerProcess:
        workdir = self.tmp_path / name
        workdir.mkdir()
        proc = e2e_lib.ControllerProcess(
            str(workdir),
            kubeconfig or self.e2e.kubeconfig,
            self.e2e.providers,
            self.e2e.namespace,
            self.lease_id,
        )
        proc.start(extra_args=[*TIMING, "--run-log", self.run_log])
        self.procs.append(proc)
        return proc

    def holder(self) -> str:
        lease = k8s.CoordinationV1Api(self.e2e.admin).read_namespaced_lease(
            self.lease_id, e2e_lib.CONTROLLER_NS
        )
        return lease.spec.holder_identity or ""

    def identity(self, proc) -> str:
        return "%s_%d" % (socket.gethostname(), proc.proc.pid)

    def wait_leader(self, proc, timeout: float = 60) -> None:
        kube_testlib.wait_for(
            "%s leads" % self.identity(proc), lambda: self.holder() == self.identity(proc), timeout
        )

    def runs_of(self, proc) -> int:
        return sum(1 for r in self.records() if r["what"] == "start" and r["identity"] == self.identity(proc))

    def records(self) -> list:
        if not os.path.exists(self.run_log):
            return []
        with open(self.run_log) as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def intervals(self) -> list:
        runs = {}
        for record in self.records():
            entry = runs.setdefault(record["run"], {"identity": record["identity"]})
            if record["what"] == "start":
                entry["start"] = record["time"]
            else:  # "end" (the controller) or "killed" (the watchdog): whichever came first
                entry["end"] = min(entry.get("end", record["time"]), record["time"])
        return [
            (r["start"], r.get("end", float("inf")), r["identity"]) for r in runs.values() if "start" in r
        ]


def test_no_two_leaders_ever_run_provider_calls_at_once(
    controller_api, kube_cluster, kube_namespace, tmp_path
):
    e2e = E2E(controller_api, kube_cluster, kube_namespace, tmp_path)
    fleet = Fleet(e2e, tmp_path, kube_cluster)
    forwarder = Forwarder(fleet.upstream)
    try:
        a = fleet.start("a")
        a.wait_ready()
        fleet.wait_leader(a)
        b = fleet.start("b")
        for name in ("la", "lb", "lc"):
            e2e.custom.create_namespaced_custom_object(
                GROUP, VERSION, kube_namespace, PLURAL, proxy_body(name, {"provider": "local"})
            )
        for name in ("la", "lb", "lc"):
            e2e_lib.wait_condition(e2e.custom, kube_namespace, name, "Ready", 90, a)

        # 1. The leader is frozen: the standby takes over; the old leader, resumed, exits.
        kube_testlib.wait_for("a run of a", lambda: fleet.runs_of(a) > 0, 30)
        os.kill(a.proc.pid, signal.SIGSTOP)
        fleet.wait_leader(b, 60)
        kube_testlib.wait_for("a run of b", lambda: fleet.runs_of(b) > 0, 30)
        os.kill(a.proc.pid, signal.SIGCONT)
        kube_testlib.wait_for("the old leader exited", lambda: a.proc.poll() is not None, 30)
        assert a.proc.returncode == 1, a.tail()

        # 2. The leader is SIGTERMed mid-run: it drains while renewing, then hands over.
        c = fleet.start("c", _kubeconfig_via(e2e.kubeconfig, forwarder, str(tmp_path / "via.kubeconfig")))
        time.sleep(2)
        starts = fleet.runs_of(b)
        kube_testlib.wait_for("b starts a run", lambda: fleet.runs_of(b) > starts, 30, interval=0.05)
        assert b.stop() == 0, b.tail()
        fleet.wait_leader(c, 60)
        kube_testlib.wait_for("a run of c", lambda: fleet.runs_of(c) > 0, 30)

        # 3. The leader alone loses the API server: it stops everything and exits.
        d = fleet.start("d")
        time.sleep(2)
        forwarder.cut()
        kube_testlib.wait_for("the cut-off leader exited", lambda: c.proc.poll() is not None, 60)
        assert c.proc.returncode == 1, c.tail()
        fleet.wait_leader(d, 60)
        kube_testlib.wait_for("a run of d", lambda: fleet.runs_of(d) > 0, 30)
        for name in ("la", "lb", "lc"):
            e2e_lib.wait_condition(e2e.custom, kube_namespace, name, "Ready", 90, d)

        spans = sorted(fleet.intervals())
        assert {i for _s, _e, i in spans} >= {fleet.identity(p) for p in (a, b, c, d)}
        overlaps = [
            (x, y)
            for n, x in enumerate(spans)
            for y in spans[n + 1 :]
            if x[2] != y[2] and y[0] < x[1] and x[0] < y[1]
        ]
        assert overlaps == [], "runs of two identities overlapped: %s" % overlaps
        for name in ("la", "lb", "lc"):
            obj = e2e.custom.get_namespaced_custom_object(GROUP, VERSION, kube_namespace, PLURAL, name)
            assert condition(obj, "PermanentError").get("status") != "True"
        for name in ("la", "lb", "lc"):
            e2e.delete(name)
        for name in ("la", "lb", "lc"):
            e2e_lib.wait_proxy(e2e.custom, kube_namespace, name, lambda o: o == "gone", "gone", 90, d)
        assert d.stop() == 0, d.tail()
    finally:
        forwarder.close()
        for proc in fleet.procs:
            if proc.proc is not None and proc.proc.poll() is None:
                try:
                    os.kill(proc.proc.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                proc.kill()
        from .test_e2e import _kill_squids

        _kill_squids(e2e.state_dir)
