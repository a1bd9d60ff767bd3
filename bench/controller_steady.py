"""Benchmark: N Running Proxies held by the controller, what that costs per minute.

Starts the test control plane with kwok and brings N Proxies on the kubernetes provider to
Ready (the fleet). Each measurement has a controller of its own on the held fleet, lets it
settle (``--settle``: its first list and poll round), then holds for ``--hold`` seconds with the
Running poll at ``--running-poll``, for each of ``--variants`` (``rounds``: this controller,
every Running Proxy of a provider polled in one round per interval; ``spread``:
``--no-poll-rounds``, each Proxy polled one interval after its last answer, as before issue
18's rounds). With ``--pools P`` (issue 30) a second fleet holds the same N Proxies as the
members of P ProxyPools of N/P each (the pools create them), so the two fleets differ only in
the pools; with ``--auth`` every Proxy and pool template has ``spec.auth`` (one Secret, whose
version each pool's loop asks every recheck); with ``--base REV`` every fleet is measured with
REV's controller too (``bench/base_tree.py``: REV's tree run with this venv). Each fleet is
brought up by the first measurement's controller (this tree's), which is then measured on it;
every later measurement restarts the controller on the held fleet, and one that does not find
the fleet held after the settle ends that fleet's measurements with what it found. It prints,
per fleet, tree and variant:

* controller CPU (its own plus every child it waited for: ansible-runner, ansible-playbook and
  the modules) as cores on average over the hold, and peak RSS;
* ansible-runner runs and Proxies polled per run during the hold;
* how long Running Proxies went between two answered polls (``egress_proxies_poll_gap_seconds``:
  the largest bucket reached and how many gaps passed twice the Running poll interval);
* how late polls were (the work queue's ``workqueue_queue_duration_seconds``: time a key waited
  after it was due; the bucket bound that 99 % stayed under, and the largest bucket reached);
* API server requests per second during the hold, by resource (from kube-apiserver's own
  ``apiserver_request_total``: every client, its modules included), and the controller's own
  (its ``rest_client_requests_total``);
* with ``--churn F``: a third into the hold, F of the Proxies deleted and as many new ones
  created, and the seconds until every new one is Ready (the issue asks 2 minutes at most);
  pool members are never churned: with ``--pools`` too, the plain fleet is held at rest (what
  the pools are compared with) and then, by the same controller, with the churn;
* the pools' member creates and deletes during the hold (none while nothing changes);

and the CPU ratios: the last variant over the first, pools over plain Proxies, this tree over
REV; last, issue 38's two steady figures: the plain fleet's hold in cores (with the churn, as
docs/performance.md's 0.29 core was measured) and pools at rest over no pools at rest. Both in
one invocation, beside REV (docs/performance.md, "The stream-shaped Proxy loop"):
``--count 10000 --pools 100 --variants rounds --hold 600 --churn 0.1 --base main``.

Usage: .venv/bin/python bench/controller_steady.py [--count 1000] [--hold 120] [--running-poll 60]
       [--variants rounds,spread] [--min-batch-interval 0] [--churn 0.1] [--settle 90]
       [--pools 100] [--auth] [--base main]
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import os
import re
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "controller"), os.path.join(ROOT, "bench")]

import base_tree  # noqa: E402
import workdirs  # noqa: E402
from cluster import kube_testlib  # noqa: E402
from controller_scale import (  # noqa: E402
    cpu_seconds,
    create_proxies,
    kwok_plane,
    kwok_providers,
    peak_rss_mib,
    runner_runs,
)
from kubernetes import client as k8s  # noqa: E402

from controller import e2e_lib  # noqa: E402


def histogram(metrics: str, name: str) -> list:
    """[(le, cumulative count)] of one unlabelled-but-name histogram in a Prometheus text page."""
    out = []
    for le, value in re.findall(r'^%s_bucket\{le="([^"]+)",name="proxy"\} (\S+)$' % name, metrics, re.M):
        out.append((float("inf") if le == "+Inf" else float(le), float(value)))
    return sorted(out)


def running_gaps(metrics: str) -> list:
    """[(le, cumulative count)] of the Running Proxies' poll gaps (egress_proxies_poll_gap_seconds)."""
    pattern = r'^egress_proxies_poll_gap_seconds_bucket\{le="([^"]+)",state="Running"\} (\S+)$'
    found = re.findall(pattern, metrics, re.M)
    return sorted((float("inf") if le == "+Inf" else float(le), float(v)) for le, v in found)


def gap_text(before: list, after: list, interval: float) -> str:
    """The largest gap bucket reached during the hold, and how many gaps passed twice the interval."""
    if not after:
        return "-"
    counts = dict(before)
    delta = [(le, c - counts.get(le, 0.0)) for le, c in after]
    total = delta[-1][1]
    if not total:
        return "no gaps"
    top = next(le for le, c in delta if c >= total)
    within = max((c for le, c in delta if le <= 2 * interval), default=0.0)
    return "max <= %gs; %d of %d over %gs" % (top, total - within, total, 2 * interval)


def lateness(before: list, after: list) -> tuple:
    """(bound 99 % of the hold's hand-outs stayed under, largest bucket bound reached)."""
    delta = [(le, a - b) for (le, a), (_le, b) in zip(after, before, strict=True)]
    total = delta[-1][1] if delta else 0
    p99 = next((le for le, c in delta if c >= 0.99 * total), float("inf")) if total else 0.0
    top = next((le for le, c in delta if c >= total), float("inf")) if total else 0.0
    return p99, top, int(total)


def api_requests(admin) -> dict:
    # The client's own transport (its TLS client certificate and CA): kube-apiserver's /metrics.
    answer = admin.call_api("GET", admin.configuration.host + "/metrics", _request_timeout=30)
    answer.read()
    text = answer.data.decode()
    out: dict = {}
    for labels, value in re.findall(r"^apiserver_request_total\{([^}]*)\} (\S+)$", text, re.M):
        resource = re.search(r'resource="([^"]*)"', labels)
        key = resource.group(1) if resource else ""
        out[key] = out.get(key, 0.0) + float(value)
    return out


VARIANTS = {"rounds": [], "spread": ["--no-poll-rounds"]}
GROUP, VERSION = "crawl.example.com", "v1alpha1"
THIS = "this tree"
CHURNED = ", churned"  # the plain fleet's hold with --churn, a population of its own in the rows
#: docs/performance.md, "A fleet held Running": 10,000 Proxies, rounds, 600 s hold, 10 % churn
HOLD_REFERENCE = "0.29 core: --count 10000 --hold 600 --variants rounds --churn 0.1, quiet machine"
AUTH_SECRET = "bench-creds"


def controller_requests(metrics: str) -> float:
    """Requests the controller itself sent (its rest_client_requests_total, every code)."""
    return sum(float(v) for v in re.findall(r"^rest_client_requests_total\{[^}]*\} (\S+)$", metrics, re.M))


def churn(custom, namespace: str, count: int, hold_seconds: float, prefix: str) -> dict:
    """A third into the hold, delete ``count`` held Proxies and create ``count`` new ones named
    ``prefix``; returns the seconds until every new one was Ready (None when not within the rest
    of the hold). The fleet stays N Proxies, so the next measurement holds as many."""
    time.sleep(hold_seconds / 3)
    started = time.monotonic()
    held = sorted(
        o["metadata"]["name"]
        for o in e2e_lib.proxies(custom, namespace)
        if not o["metadata"].get("deletionTimestamp")
    )
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda name: custom.delete_namespaced_custom_object(
                    GROUP, VERSION, namespace, "proxies", name
                ),
                held[:count],
            )
        )
    create_proxies(custom, namespace, count, prefix + "%05d")
    deadline = started + hold_seconds * 2 / 3
    while time.monotonic() < deadline:
        fresh = [o for o in e2e_lib.proxies(custom, namespace) if o["metadata"]["name"].startswith(prefix)]
        ready = sum(1 for o in fresh if e2e_lib.is_ready(o))
        if ready == count:
            return {"count": count, "seconds": time.monotonic() - started}
        time.sleep(5)
    return {"count": count, "seconds": None}


def progress(state, count: int, what: str):
    """A probe for ``wait_for`` that is true once ``state()`` is ``count`` Ready of ``count``,
    printing the Ready once a minute (10,000 Proxies take minutes to come up here)."""
    started, last = time.monotonic(), [0.0]

    def probe() -> bool:
        ready, total = state()
        elapsed = time.monotonic() - started
        if elapsed - last[0] >= 60:
            print("  %s: %d Ready of %d Proxies after %.0fs" % (what, ready, total, elapsed), flush=True)
            last[0] = elapsed
        return ready == total == count

    return probe


def fleet_state(custom, namespace: str) -> tuple:
    """(Ready Proxies, Proxies): the fleet is held when both are N (no pool surplus, no churn
    leftovers being deleted)."""
    items = e2e_lib.proxies(custom, namespace)
    return sum(1 for o in items if e2e_lib.is_ready(o)), len(items)


def proxy_spec(args) -> dict:
    """The plain Proxies' spec and the pools' template: with ``--auth``, credentials from the
    one Secret ``AUTH_SECRET`` (a pool member names the pool's copy of it)."""
    spec = {"provider": "k8s"}
    if args.auth:
        spec["auth"] = {"secretRef": {"name": AUTH_SECRET}}
    return spec


def create_auth_secret(admin, namespace: str) -> None:
    core = k8s.CoreV1Api(admin)
    data = {"username": b"bench", "password": b"Bench-steady-pw-1"}
    body = {
        "metadata": {"name": AUTH_SECRET},
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }
    core.create_namespaced_secret(namespace, body)


def create_pools(custom, namespace: str, count: int, pools: int, template: dict) -> None:
    """``pools`` ProxyPools of ``count // pools`` members each on the kwok provider: the pools
    create their members (the members are ordinary Proxies of the same spec as the plain ones)."""
    for i in range(pools):
        body = {
            "apiVersion": "%s/%s" % (GROUP, VERSION),
            "kind": "ProxyPool",
            "metadata": {"name": "pool-%03d" % i},
            "spec": {"replicas": count // pools, "template": template},
        }
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "proxypools", body)


def timing(args) -> list:
    return [
        *("--provisioning-poll", "2", "--running-poll", str(args.running_poll)),
        *("--deletion-poll", "2", "--probe-interval", "0", "--gc-interval", "0"),
        *("--min-batch-interval", str(args.min_batch_interval)),
    ]


def fleet(admin, plane, workdir: str, kind: str) -> dict:
    """A namespace for one fleet, with its provider on kwok."""
    namespace = kube_testlib.create_namespace(admin, prefix="steady-" + kind)
    kubeconfig = e2e_lib.service_account_kubeconfig(
        admin, plane, os.path.join(workdir, "sa-%s.kubeconfig" % namespace)
    )
    return {
        "kind": kind,
        "namespace": namespace,
        "custom": k8s.CustomObjectsApi(admin),
        "admin": admin,
        "kubeconfig": kubeconfig,
        "providers": kwok_providers(kubeconfig, "steady-%s" % namespace[-6:]),
        "controllers": 0,
    }


def bring_up(population: dict, args) -> None:
    """N Ready Proxies in the fleet's namespace: plain (``proxies``) or the members of ``--pools``
    ProxyPools (``pools``)."""
    custom, namespace, kind = population["custom"], population["namespace"], population["kind"]
    started = time.monotonic()
    if args.auth:
        create_auth_secret(population["admin"], namespace)
    if kind == "pools":
        create_pools(custom, namespace, args.count, args.pools, proxy_spec(args))
    else:
        create_proxies(custom, namespace, args.count, "s%05d", proxy_spec(args))
    kube_testlib.wait_for(
        "all Ready",
        progress(lambda: fleet_state(custom, namespace), args.count, kind),
        timeout=max(1800, args.count * 0.3),
        interval=max(2, args.count / 1000),
    )
    print("  %s: %d Ready after %.0fs" % (kind, args.count, time.monotonic() - started), flush=True)


def controller(population: dict, workdir: str, tree: dict, variant: str, args):
    """A controller of ``tree`` started for the fleet's namespace, with a lease of its own (the
    one before it may still hold its lease for its duration)."""
    population["controllers"] += 1
    label = "%s-%s" % (tree["label"].split()[0], variant)
    proc = e2e_lib.ControllerProcess(
        tempfile.mkdtemp(prefix="%s-%s-" % (population["kind"], label), dir=workdir),
        population["kubeconfig"],
        population["providers"],
        population["namespace"],
        "lease-%s-%d" % (population["namespace"], population["controllers"]),
    )
    proc.start(
        extra_args=[*timing(args), *VARIANTS[variant]], code=tree["code"], collections=tree["collections"]
    )
    return proc


def pool_member_writes(metrics: str) -> float:
    """Members the pool loop created or deleted (none while nothing changes)."""
    pattern = r"^egress_proxies_pool_members_(?:created|deleted)_total\{[^}]*\} (\S+)$"
    return sum(float(v) for v in re.findall(pattern, metrics, re.M))


def run_fleet(admin, plane, workdir: str, kind: str, trees: list, args) -> list:
    """Every tree and variant measured on one fleet: the first controller brings the fleet up
    and is measured on it; each after it is a restart on the held fleet. A restart that does not
    find the fleet held after ``--settle`` (a pool loop that made members again) ends the fleet's
    measurements with what it found."""
    population = fleet(admin, plane, workdir, kind)
    rows = []
    for n, (tree, variant) in enumerate((t, v) for t in trees for v in args.variants.split(",")):
        proc = controller(population, workdir, tree, variant, args)
        try:
            proc.wait_ready()
            if n == 0:
                bring_up(population, args)
            for churning, settle in holds(kind, args):
                rows.append(hold(admin, population, proc, tree, variant, args, churning, settle))
                if rows[-1].get("not_held"):
                    break
            proc.stop()
        finally:
            if proc.proc.poll() is None:
                proc.kill()
        if rows[-1].get("not_held"):
            break
    # The namespace stays Terminating (the Proxies keep their finalizer with no controller left);
    # the plane goes at the end of the run, and kwok's node has room for every fleet.
    kube_testlib.delete_namespace(admin, population["namespace"])
    return rows


def holds(kind: str, args) -> list:
    """[(churn fraction, settle seconds)] of the holds one controller is measured in on a fleet.
    Pool members are not churned. With ``--pools`` and ``--churn`` the plain fleet is held at
    rest first (what the pools are compared with) and then with the churn, without a restart
    (the churned hold is what docs/performance.md's 0.29 core was measured as)."""
    if kind == "pools" or not args.churn:
        return [(0.0, args.settle)]
    if args.pools:
        return [(0.0, args.settle), (args.churn, 0.0)]
    return [(args.churn, args.settle)]


def hold(
    admin, population: dict, proc, tree: dict, variant: str, args, churning: float, settle: float
) -> dict:
    """One measurement on the held fleet: ``settle`` seconds, then the hold, with ``churning``
    of the fleet replaced a third into it."""
    hold_seconds, poll = args.hold, args.running_poll
    namespace, custom = population["namespace"], population["custom"]
    kind = population["kind"] + (CHURNED if churning else "")
    row = {"population": kind, "tree": tree["label"], "variant": variant}
    time.sleep(settle)
    ready, total = fleet_state(custom, namespace)
    if not ready == total == args.count:
        row["not_held"] = "%d Proxies, %d Ready, %d pool member writes, %d s after the start" % (
            total,
            ready,
            pool_member_writes(proc.metrics()),
            settle,
        )
        print("  %s, %s, %s: not held: %s" % (kind, tree["label"], variant, row["not_held"]))
        return row
    print(
        "  %s, %s, %s: holding %ds (load average %.1f)"
        % (kind, tree["label"], variant, hold_seconds, os.getloadavg()[0]),
        flush=True,
    )
    metrics0 = proc.metrics()
    cpu0, runs0, api0 = cpu_seconds(proc.proc.pid), runner_runs(metrics0), api_requests(admin)
    queue0 = histogram(metrics0, "workqueue_queue_duration_seconds")
    gaps0 = running_gaps(metrics0)
    load0 = os.getloadavg()[0]
    began = time.monotonic()
    prefix = "c%d-" % population["controllers"]
    count = int(args.count * churning)
    churned = churn(custom, namespace, count, hold_seconds, prefix) if churning else None
    time.sleep(max(0.0, hold_seconds - (time.monotonic() - began)))
    metrics1 = proc.metrics()
    cpu1, runs1, api1 = cpu_seconds(proc.proc.pid), runner_runs(metrics1), api_requests(admin)
    p99, top, handed = lateness(queue0, histogram(metrics1, "workqueue_queue_duration_seconds"))
    rates = {k: (api1.get(k, 0) - api0.get(k, 0)) / hold_seconds for k in api1}
    row.update(
        cpu=cpu1 - cpu0,
        cores=(cpu1 - cpu0) / hold_seconds,
        rss=peak_rss_mib(proc.proc.pid),
        runs=runs1 - runs0,
        handed=handed,
        p99=p99,
        top=top,
        gaps=gap_text(gaps0, running_gaps(metrics1), poll),
        api=sum(rates.values()),
        own_api=(controller_requests(metrics1) - controller_requests(metrics0)) / hold_seconds,
        churned=churned,
        pool_writes=pool_member_writes(metrics1) - pool_member_writes(metrics0),
        load=(load0, os.getloadavg()[0]),
        api_top=sorted(((v, k) for k, v in rates.items() if v > 0.01), reverse=True)[:4],
    )
    return row


def churn_text(churned: dict | None) -> str:
    if not churned:
        return "-"
    if churned["seconds"] is None:
        return "%d replaced, not all Ready within the hold" % churned["count"]
    return "%d replaced, all Ready in %.0fs" % (churned["count"], churned["seconds"])


def ratio(rows: list, field: str, over: str, under: str) -> str:
    """Cores of the rows whose ``field`` is ``over`` against those alike in every other field
    whose ``field`` is ``under``."""
    others = [f for f in ("population", "tree", "variant") if f != field]
    by = {(tuple(r[f] for f in others), r[field]): r for r in rows if not r.get("not_held")}
    out = []
    for (group, value), top in by.items():
        bottom = by.get((group, under))
        if value == over and bottom:
            out.append(
                "%s %.3fx (%.1f / %.1f CPU-s)"
                % (", ".join(group), top["cores"] / max(1e-9, bottom["cores"]), top["cpu"], bottom["cpu"])
            )
    return "; ".join(out) or "-"


def print_rows(rows: list, args, trees: list) -> None:
    print(
        "\n%d Running Proxies held %ds (after %ds settling), Running poll %gs; command: "
        "bench/controller_steady.py %s"
        % (args.count, args.hold, args.settle, args.running_poll, " ".join(sys.argv[1:]))
    )
    print(
        "| fleet | tree | polls | CPU-s over the hold | cores (with children) | peak RSS MiB | runner runs "
        "| keys per run | poll late p99 / max (bucket) | Running poll gaps | API req/s (all / controller's) "
        "| top resources req/s | pool member writes | churn | load average |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r.get("not_held"):
            print(
                "| %s | %s | %s | not held: %s |" % (r["population"], r["tree"], r["variant"], r["not_held"])
            )
            continue
        print(
            "| %s | %s | %s | %.1f | %.3f | %.0f | %d | %.0f | <= %gs / <= %gs | %s | %.1f / %.1f "
            "| %s | %d | %s | %.1f-%.1f |"
            % (
                r["population"],
                r["tree"],
                r["variant"],
                r["cpu"],
                r["cores"],
                r["rss"],
                r["runs"],
                r["handed"] / max(1, r["runs"]),
                r["p99"],
                r["top"],
                r["gaps"],
                r["api"],
                r["own_api"],
                ", ".join("%s %.1f" % (k or "-", v) for v, k in r["api_top"]),
                r["pool_writes"],
                churn_text(r["churned"]),
                *r["load"],
            )
        )
    variants = args.variants.split(",")
    if len(variants) > 1:
        print(
            "\nCPU %s / %s: %s"
            % (variants[-1], variants[0], ratio(rows, "variant", variants[-1], variants[0]))
        )
    if args.pools:
        print("CPU pools / proxies (both at rest): " + ratio(rows, "population", "pools", "proxies"))
    if args.base:
        base = trees[-1]["label"]  # resolved once at the start: the branch may move meanwhile
        print("CPU %s / %s: %s" % (THIS, base, ratio(rows, "tree", THIS, base)))
    print_goals(rows, args)


def print_goals(rows: list, args) -> None:
    """Issue 38's two steady figures: the plain fleet's hold in cores (with ``--churn``, as the
    reference was measured) against the reference and per tree, and pools at rest over no pools."""
    held = "proxies" + (CHURNED if args.churn else "")
    print("\nIssue 38, steady figures:")
    for r in rows:
        if r["population"] == held and not r.get("not_held"):
            print(
                "  hold of %d Proxies%s, %s, %s: %.3f cores (reference %s)"
                % (
                    args.count,
                    " with %g%% churn" % (100 * args.churn) if args.churn else "",
                    r["tree"],
                    r["variant"],
                    r["cores"],
                    HOLD_REFERENCE,
                )
            )
    if args.pools:
        print(
            "  pools at rest / no pools at rest (issue: about 1.0x): "
            + ratio(rows, "population", "pools", "proxies")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--hold", type=float, default=120.0)
    parser.add_argument(
        "--settle", type=float, default=90.0, help="seconds from a controller's start to its hold"
    )
    parser.add_argument("--running-poll", type=float, default=60.0)
    parser.add_argument("--variants", default="rounds,spread")
    parser.add_argument("--min-batch-interval", type=float, default=0.0)
    parser.add_argument(
        "--churn", type=float, default=0.0, help="fraction deleted and recreated during the hold (0.1: 10 %%)"
    )
    parser.add_argument(
        "--pools", type=int, default=0, help="also hold the N Proxies as members of this many ProxyPools"
    )
    parser.add_argument(
        "--auth", action="store_true", help="every Proxy and pool template with spec.auth (one Secret)"
    )
    parser.add_argument("--base", default="", help="also measure the controller of this revision (e.g. main)")
    args = parser.parse_args()
    if args.pools and args.count % args.pools:
        parser.error("--pools must divide --count")
    workdir = workdirs.make("bench-steady-")
    trees = [{"label": THIS, "code": ROOT, "collections": ""}]
    if args.base:
        code, collections = base_tree.export(args.base, os.path.join(workdir, "base"))
        trees.append({"label": base_tree.short(args.base), "code": code, "collections": collections})
    kinds = ["proxies", "pools"] if args.pools else ["proxies"]
    churned = int(args.count * args.churn) * len(trees) * len(args.variants.split(","))
    plane, admin = kwok_plane(workdir, args.count * len(kinds) + churned + 100)
    rows = []
    try:
        for kind in kinds:
            rows += run_fleet(admin, plane, workdir, kind, trees, args)
    finally:
        plane.stop()
    print_rows(rows, args, trees)


if __name__ == "__main__":
    main()
