"""Benchmark: N Proxies to Ready through the controller, batched against per-Proxy runs.

Starts the test control plane (tests/cluster: kube-apiserver, etcd, scheduler, controller
manager, kwok sized for the run), installs the shipped CRDs and RBAC, and for each N and mode
starts the controller as a real process (ServiceAccount token, shipped RBAC), creates N Proxies
on the kubernetes provider (Pods that kwok brings to Running), and measures:

* seconds until every Proxy is Ready (or how many were Ready when the time budget ran out),
* per Proxy, the seconds from its create call's return to its first Ready=True, seen through a
  watch of the namespace's Proxies (bench/ready_watch.py), as p50, p90 and p99, and how many
  were Ready when the floor had finished (issue 38: Ready as they come, not in a lump),
* controller CPU seconds (its own plus the ansible-runner/ansible-playbook processes it waited
  for), peak RSS of the controller process, and the number of ansible-runner runs.

Modes: ``batch`` is this controller's design (every due Proxy of a tick in one runner run, at
most 3 runs in flight); ``per-proxy`` is what operator-sdk's Ansible operator does (one runner
run per reconcile; as many reconciles at once as CPUs, here 2), using the same controller with
``--batch-max 1 --poll-batch-max 1 --runs-in-flight 2``, so only the batching differs.

``floor`` (bench/burst_floor.py) is no controller at all: a plain client making the same API
writes and provider calls in this process; the batch mode's time over it is the controller's
own share of a burst (issue 30 asks at most 1.5x).

``--base REV`` measures the batch mode with REV's controller too, right after this tree's, on
the same control plane (``bench/base_tree.py``: REV's tree run with this venv), and prints the
ratio: the side-by-side comparison with main that issue 30 asks for.

Each run ends with a table of the creation-to-Ready figures (docs/performance.md's columns) and,
for every mode measured beside a floor, whether it met issue 38's goal (bench/ready_times.py:
total at most 1.2x the floor's, p50 at most 1.3x the floor's p50). ``--runs N`` runs the whole
set N times in a row on the same plane and says in how many each mode met it.

Usage: .venv/bin/python bench/controller_scale.py [--counts 100,1000] [--modes batch,per-proxy,floor]
       [--budget 900] [--base main] [--runs 3]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [
    os.path.join(ROOT, "tests"),
    os.path.join(ROOT, "controller"),
    os.path.join(ROOT, ".venv", "collections"),
]

import base_tree  # noqa: E402
import ready_times  # noqa: E402
import ready_watch  # noqa: E402
import workdirs  # noqa: E402
from cluster import kube_testlib  # noqa: E402
from cluster.kube_cluster import ControlPlane  # noqa: E402
from kubernetes import client as k8s  # noqa: E402

from controller import e2e_lib  # noqa: E402

MODES = {
    "batch": [],
    "per-proxy": [
        *("--batch-max", "1", "--poll-batch-max", "1"),
        *("--runs-in-flight", "2", "--list-poll-threshold", "100000"),
    ],
}
CLK_TCK = os.sysconf("SC_CLK_TCK")
# kwok Pods run no Squid, so the proxy health engine is off: Ready here means Running.
KWOK_TIMING = [
    *("--provisioning-poll", "2", "--running-poll", "600"),
    *("--deletion-poll", "2", "--probe-interval", "0"),
]


def kwok_plane(workdir: str, max_pods: int) -> tuple:
    """(plane, admin client): the test control plane started with kwok sized for ``max_pods``,
    the shipped CRDs and RBAC installed; the caller stops the plane."""
    # A loopback range with an address for every Pod (kwok draws Pod IPs from it): /20 up to
    # 4094 Pods, /17 for 10,000 and their replacements.
    prefix = max(16, min(20, 32 - (max_pods + 2).bit_length()))
    plane = ControlPlane(os.path.join(workdir, "cluster"), max_pods=max_pods, pod_cidr_prefix=prefix)
    plane.start()
    try:
        admin = kube_testlib.api_client(plane.kubeconfig)
        e2e_lib.install_api(admin)
        e2e_lib.install_kubernetes_provider_rbac(admin)
    except BaseException:
        plane.stop()
        raise
    return plane, admin


def cpu_seconds(pid: int) -> float:
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    return (utime + stime + cutime + cstime) / CLK_TCK


def peak_rss_mib(pid: int) -> float:
    with open("/proc/%d/status" % pid) as handle:
        match = re.search(r"VmHWM:\s+(\d+) kB", handle.read())
    return int(match.group(1)) / 1024 if match else 0.0


def runner_runs(metrics: str) -> int:
    return int(
        sum(float(v) for v in re.findall(r"^egress_proxies_runner_runs_total\{[^}]*\} (\S+)$", metrics, re.M))
    )


def series_sums(metrics: str, name: str, label: str) -> dict:
    """{label value: summed sample} of one series in a Prometheus text page."""
    out = {}
    pattern = r"^%s\{([^}]*)\} (\S+)$" % re.escape(name)
    for labels, value in re.findall(pattern, metrics, re.M):
        match = re.search(r'%s="([^"]*)"' % label, labels)
        if match:
            out[match.group(1)] = out.get(match.group(1), 0.0) + float(value)
    return out


def breakdown(metrics: str) -> str:
    """Where the time went, summed over runs and requests (they overlap, so the sums may exceed
    the wall time): runner start-up, module work and wind-down; provider calls by operation;
    API requests by verb."""
    phases = series_sums(metrics, "egress_proxies_runner_phase_seconds_sum", "phase")
    ops = series_sums(metrics, "egress_proxies_provider_operation_duration_seconds_sum", "op")
    calls = series_sums(metrics, "egress_proxies_provider_operation_duration_seconds_count", "op")
    verbs = series_sums(metrics, "rest_client_request_duration_seconds_sum", "verb")
    requests = series_sums(metrics, "rest_client_requests_total", "method")
    parts = [
        "runs: " + ", ".join("%s %.1fs" % (p, phases.get(p, 0.0)) for p in ("startup", "module", "finish"))
    ]
    parts.append(
        "provider calls: " + ", ".join("%s %d in %.1fs" % (o, calls.get(o, 0), ops[o]) for o in sorted(ops))
    )
    parts.append(
        "API requests: "
        + ", ".join("%s %d in %.1fs" % (v, requests.get(v, 0), verbs[v]) for v in sorted(verbs))
    )
    return "; ".join(parts)


def kwok_providers(kubeconfig: str, installation: str) -> dict:
    """One kubernetes provider on the test control plane, Pods small enough for kwok's node."""
    return {
        "installation": installation,
        # 10m CPU per Pod so 1000 Pods fit on the simulated node (32 CPUs; the default request is 50m).
        "providers": [
            {
                "name": "k8s",
                "type": "kubernetes",
                "kubernetes": {
                    "kubeconfig": kubeconfig,
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                },
            }
        ],
    }


def create_proxies(custom, namespace: str, count: int, name_format: str, spec: dict | None = None) -> dict:
    """``count`` Proxies on that provider (``spec``, default the provider alone), named by
    ``name_format``, created 8 at a time; returns {name: monotonic time its create returned}, the
    client-side creation time the Ready waits are counted from."""
    spec = spec or {"provider": "k8s"}

    def create(i: int) -> tuple:
        name = name_format % i
        custom.create_namespaced_custom_object(
            "crawl.example.com", "v1alpha1", namespace, "proxies", e2e_lib.proxy_body(name, spec)
        )
        return name, time.monotonic()

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return dict(pool.map(create, range(count)))


def wait_all(readiness, started: float, count: int, budget: float, what: str, sample=None) -> float:
    """Seconds from ``started`` until the watch saw all ``count`` Ready or ``budget`` ran out,
    with a progress line every 30 s; ``sample`` is called at every look (5 a second: peak RSS)."""
    last_report = 0.0
    while True:
        elapsed = time.monotonic() - started
        ready = readiness.count()
        if sample:
            sample()
        if elapsed - last_report >= 30:
            print("  %s: %d Ready after %.0fs" % (what, ready, elapsed), flush=True)
            last_report = elapsed
        if ready >= count or elapsed > budget:
            return elapsed
        time.sleep(0.2)


def burst_figures(started: float, created: dict, ready_at: dict, count: int, elapsed: float) -> dict:
    """A row's Ready figures (bench/ready_times.py): ``seconds`` is the last Ready's offset
    when all were Ready, else the time waited."""
    found = ready_times.figures(started, created, ready_at, count)
    return {
        **found,
        "ready": len(ready_at),
        "seconds": found["total"] if found["total"] is not None else elapsed,
        "complete": found["total"] is not None,
    }


def run_one(
    admin, plane, workdir: str, count: int, mode: str, budget: float, tree: dict | None = None
) -> dict:
    """One measured burst; ``tree``: another revision's code and collections (``--base``)."""
    tree = tree or {}
    namespace = kube_testlib.create_namespace(admin, prefix="bench")
    custom = k8s.CustomObjectsApi(admin)
    kubeconfig = e2e_lib.service_account_kubeconfig(
        admin, plane, os.path.join(workdir, "sa-%s.kubeconfig" % namespace)
    )
    providers = kwok_providers(kubeconfig, "bench")
    rundir = tempfile.mkdtemp(prefix="%s-%d-" % (mode, count), dir=workdir)
    proc = e2e_lib.ControllerProcess(rundir, kubeconfig, providers, namespace, "lease-" + namespace)
    timing = KWOK_TIMING
    code = {"code": tree["code"], "collections": tree["collections"]} if tree else {}
    proc.start(extra_args=MODES[mode] + timing, **code)
    proc.wait_ready()
    readiness = ready_watch.ReadyWatch(custom, namespace)
    started = time.monotonic()
    created = create_proxies(custom, namespace, count, "p%04d")
    peak = 0.0

    def sample() -> None:
        nonlocal peak
        peak = max(peak, peak_rss_mib(proc.proc.pid))

    elapsed = wait_all(readiness, started, count, budget, "%s N=%d" % (mode, count), sample)
    readiness.stop()
    cpu = cpu_seconds(proc.proc.pid)
    page = proc.metrics()
    runs = runner_runs(page)
    where = breakdown(page)
    proc.stop()
    # Clean up with a batched controller whatever the mode measured: per-Proxy deletion of 1000
    # Proxies would take longer than the measurement itself.
    cleaner = e2e_lib.ControllerProcess(
        tempfile.mkdtemp(prefix="cleanup-", dir=workdir),
        kubeconfig,
        providers,
        namespace,
        "lease-" + namespace + "-cleanup",
    )
    cleaner.start(extra_args=timing)
    cleaner.wait_ready()
    items = custom.list_namespaced_custom_object("crawl.example.com", "v1alpha1", namespace, "proxies")[
        "items"
    ]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda o: custom.delete_namespaced_custom_object(
                    "crawl.example.com", "v1alpha1", namespace, "proxies", o["metadata"]["name"]
                ),
                items,
            )
        )
    kube_testlib.wait_for(
        "proxies deleted",
        lambda: (
            not custom.list_namespaced_custom_object("crawl.example.com", "v1alpha1", namespace, "proxies")[
                "items"
            ]
        ),
        timeout=1200,
    )
    cleaner.stop()
    kube_testlib.delete_namespace(admin, namespace)
    return {
        "mode": mode + ("@" + tree["label"] if tree else ""),
        "count": count,
        **burst_figures(started, created, readiness.snapshot(), count, elapsed),
        "cpu": cpu,
        "rss": peak,
        "runs": runs,
        "breakdown": where,
    }


def measure(admin, plane, workdir: str, counts: list, modes: list, budget: float) -> list:
    """One run: every count through every mode, in order, on the one plane."""
    rows = []
    for count in counts:
        for mode, tree in modes:
            print("== %s%s, %d Proxies" % (mode, " @" + tree["label"] if tree else "", count), flush=True)
            if mode == "floor":
                import burst_floor

                row = burst_floor.run(admin, plane, workdir, count, budget)
            else:
                row = run_one(admin, plane, workdir, count, mode, budget, tree)
            rows.append(row)
            print(
                "   -> %s N=%d: %d Ready in %.1fs (p50 %s s, p90 %s s, p99 %s s), cpu %.1fs, rss %.1f MiB, "
                "%d runner runs\n      %s"
                % (
                    row["mode"],
                    count,
                    row["ready"],
                    row["seconds"],
                    *(ready_times.seconds_text(row["p%d" % q]) for q in ready_times.QUANTILES),
                    row["cpu"],
                    row["rss"],
                    row["runs"],
                    row["breakdown"],
                ),
                flush=True,
            )
    return rows


def print_costs(rows: list) -> None:
    print("Proxies to Ready through the controller (kubernetes provider on kwok), 2 cores")
    print("%-16s %6s %10s %8s %10s %10s %8s" % ("mode", "N", "ready", "seconds", "cpu s", "rss MiB", "runs"))
    for r in rows:
        print(
            "%-16s %6d %10s %8.1f %10.1f %10.1f %8d"
            % (
                r["mode"],
                r["count"],
                "%d/%d" % (r["ready"], r["count"]),
                r["seconds"],
                r["cpu"],
                r["rss"],
                r["runs"],
            )
        )


def print_ready_table(run: int, rows: list) -> list:
    """The run's creation-to-Ready table (docs/performance.md's columns) and its goal lines;
    returns [(mode, count, met)] for every mode measured beside a floor."""
    print(
        "| run | mode | N | total s | ratio to floor | p50 s | p90 s | p99 s | Ready at floor's total "
        "| p50 / floor p50 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    floors = {r["count"]: r for r in rows if r["mode"] == "floor"}
    verdicts = []
    for r in rows:
        floor = floors.get(r["count"])
        at_floor = "-"
        if floor and floor["total"] is not None:
            at_floor = "%d/%d" % (ready_times.ready_by(r["offsets"], floor["total"]), r["count"])
        print(
            "| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s |"
            % (
                run,
                r["mode"],
                r["count"],
                ready_times.seconds_text(r["total"])
                if r["complete"]
                else "> %.0f (%d Ready)"
                % (
                    r["seconds"],
                    r["ready"],
                ),
                ready_times.ratio_text(ready_times.ratio(r["total"], floor and floor["total"])),
                *(ready_times.seconds_text(r["p%d" % q]) for q in ready_times.QUANTILES),
                at_floor,
                ready_times.ratio_text(ready_times.ratio(r["p50"], floor and floor["p50"])),
            )
        )
    for r in rows:
        marks = ready_times.timeline(r["offsets"], 5.0, r["seconds"])
        print(
            "  %s N=%d: last create returned at %s s; Ready by %s"
            % (
                r["mode"],
                r["count"],
                ready_times.seconds_text(r.get("last_created")),
                ", ".join("%.0fs %d" % mark for mark in marks),
            )
        )
    for r in rows:
        floor = floors.get(r["count"])
        if floor and r is not floor:
            met, why = ready_times.goal(r, floor)
            verdicts.append((r["mode"], r["count"], met))
            print(
                "run %d, %s N=%d: goal (total <= %.1fx floor, p50 <= %.1fx floor p50) %s: %s"
                % (
                    run,
                    r["mode"],
                    r["count"],
                    ready_times.TOTAL_RATIO,
                    ready_times.P50_RATIO,
                    "MET" if met else "MISSED",
                    why,
                )
            )
    return verdicts


def print_comparisons(rows: list, counts: list, base: dict) -> None:
    for count in counts:
        by_mode = {r["mode"]: r for r in rows if r["count"] == count}
        if base and "batch" in by_mode and "batch@" + base["label"] in by_mode:
            b, m = by_mode["batch"], by_mode["batch@" + base["label"]]
            print(
                "N=%d: batch, this tree/%s: time %.2fx (%.1f s against %.1f s), cpu %.2fx"
                % (
                    count,
                    base["label"],
                    b["seconds"] / m["seconds"],
                    b["seconds"],
                    m["seconds"],
                    b["cpu"] / m["cpu"],
                )
            )
        if "batch" in by_mode and "per-proxy" in by_mode:
            b, p = by_mode["batch"], by_mode["per-proxy"]
            rate_b, rate_p = b["ready"] / b["seconds"], p["ready"] / p["seconds"]
            print(
                "N=%d: per-proxy/batch: time %.1fx%s, cpu %.1fx, runs %.1fx (Ready/s %.2f vs %.2f)"
                % (
                    count,
                    p["seconds"] / b["seconds"],
                    "" if p["complete"] else " (per-proxy incomplete: rates)",
                    p["cpu"] / b["cpu"],
                    p["runs"] / max(1, b["runs"]),
                    rate_b,
                    rate_p,
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="100,1000")
    parser.add_argument("--modes", default="batch,per-proxy")
    parser.add_argument("--budget", type=float, default=900.0, help="seconds per run before giving up")
    parser.add_argument("--base", default="", help="also measure the batch mode of this revision (e.g. main)")
    parser.add_argument("--runs", type=int, default=1, help="run the whole set this many times in a row")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    counts = [int(c) for c in args.counts.split(",")]
    workdir = workdirs.make("bench-controller-")
    base = {}
    if args.base:
        code, collections = base_tree.export(args.base, os.path.join(workdir, "base"))
        base = {"code": code, "collections": collections, "label": base_tree.short(args.base)}
    modes = []
    for mode in args.modes.split(","):
        modes.append((mode, None))
        if mode == "batch" and base:
            modes.append((mode, base))
    plane, admin = kwok_plane(workdir, max(counts) * 2 + 100)
    try:
        outcomes: dict = {}
        for run in range(1, args.runs + 1):
            if args.runs > 1:
                print("=== run %d of %d" % (run, args.runs), flush=True)
            rows = measure(admin, plane, workdir, counts, modes, args.budget)
            print()
            print_costs(rows)
            print_comparisons(rows, counts, base)
            print(
                "\nCreation to Ready, run %d (command: bench/controller_scale.py %s)"
                % (run, " ".join(sys.argv[1:]))
            )
            for mode, count, met in print_ready_table(run, rows):
                outcomes.setdefault((mode, count), []).append(met)
            print(flush=True)
        if args.runs > 1:
            print("Goal over the %d runs in a row:" % args.runs)
            for (mode, count), results in outcomes.items():
                print("  %s N=%d: met in %d of %d runs" % (mode, count, sum(results), args.runs))
    finally:
        plane.stop()


if __name__ == "__main__":
    main()
