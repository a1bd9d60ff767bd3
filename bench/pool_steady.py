"""Benchmark: what the ProxyPool loop costs while nothing changes, event-driven against a scan.

Issue 30: the pool loop of 81faa79 (``--base``) ran every second over every cached Proxy (to
find each pool's members) and every pool, whatever had changed; this tree's loop reconciles a
pool only when it or a member changed, or at a time it must act (``_next_check``). Both are the
shipped ``PoolController`` code: the base's ``pool/controller.py`` is loaded from git beside this
tree's, over the same package. Each is given ``--pools`` pools of ``--members`` Ready members in
real ``Informer`` caches (no API server: the pool's API calls go to an in-memory store that
counts them), settled, then driven for ``--seconds`` rounds, one per simulated second (the
queue's clock moves one second a round; nothing sleeps). Both use this tree's Publisher: this
tree's reads the Service and EndpointSlice from its informers' caches (which the in-memory
store's writes reach, as their watch would) and the Secret back with a get; a base from before
issue 38 gives its Publisher no caches, so there it reads all three back with a get at every
reconcile, as its own did.

Printed for each: the loop's CPU per simulated second (``time.process_time``, which is what it
takes from the controller's cores), pools reconciled, Proxy cache reads and API calls over the
hold, and the ratios. The loop's CPU is then put against the controller's steady CPU holding
10,000 Proxies measured on kwok (docs/performance.md) to say what share of it the pool loop is.

Usage: .venv/bin/python bench/pool_steady.py [--pools 100] [--members 100] [--seconds 120]
       [--base 81faa79]
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.util
import inspect
import itertools
import os
import subprocess
import sys
import tempfile
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "controller")]

from egress_proxies_controller.kube import informer as informer_mod  # noqa: E402
from egress_proxies_controller.kube.workqueue import WorkQueue  # noqa: E402
from egress_proxies_controller.pool import controller as pool_reconciler  # noqa: E402
from egress_proxies_controller.pool.model import POOL_FINALIZER  # noqa: E402
from egress_proxies_controller.pool.publish import Publisher  # noqa: E402
from egress_proxies_controller.telemetry.pool_metrics import PoolMetrics  # noqa: E402
from kubernetes import client as k8s  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

PROVIDER = "kube"


class Clock:
    def __init__(self, start: float):
        self.now = start

    def __call__(self) -> float:
        return self.now


def deliver(informer, obj: dict) -> None:
    """One watch event into an informer's cache: ``apply_event`` in this tree, ``store`` in a
    base tree from before the informer had it."""
    apply = getattr(informer, "apply_event", None)
    if apply is not None:
        apply("MODIFIED", obj)
    else:
        informer.store(obj)


class MemoryPoolKube:
    """The pool's API calls against dicts, counted (reads also on their own)."""

    def __init__(self):
        self.calls = self.reads = 0
        self.published = {}
        self.names = itertools.count()
        self.proxies = None  # the Proxy cache its creates reach, as their watch events would
        self.pool_informer = None  # the pool cache its pool writes reach
        self.caches = {}  # the published kinds' caches its creates and replaces reach, by kind
        self.versions = itertools.count(2)

    def set_finalizer(self, obj, present):
        self.calls += 1
        fins = [POOL_FINALIZER] if present else []
        return self._pool_watch(dict(obj, metadata=dict(obj["metadata"], finalizers=fins)))

    def write_status(self, obj, status):
        self.calls += 1
        return self._pool_watch(dict(obj, status=status))

    def _pool_watch(self, written):
        """A pool's write reaches the pool cache as its watch event would (this tree's loop
        does not store its own writes; the base's does, and storing twice changes nothing)."""
        if self.pool_informer is not None:
            deliver(self.pool_informer, written)
        return written

    def create_proxy(self, namespace, body):
        self.calls += 1
        n = next(self.names)
        meta = dict(body["metadata"], name="%s%05d" % (body["metadata"]["generateName"], n))
        meta.update(uid="m-%d" % n, resourceVersion="1", creationTimestamp="2026-12-01T10:00:00Z")
        made = dict(body, metadata=meta)
        if self.proxies is not None:
            deliver(self.proxies, made)  # its watch event, at once (the loop waits for it: expectations)
        return made

    def delete_proxy(self, namespace, name, uid):
        self.calls += 1
        return None

    def read(self, kind, namespace, name):
        self.calls += 1
        self.reads += 1
        return self.published.get((kind, namespace, name))

    def create(self, kind, namespace, body):
        """The object as stored, also delivered to its kind's cache (its watch event)."""
        self.calls += 1
        key = (kind, namespace, body["metadata"]["name"])
        old = self.published.get(key)
        uid = old["metadata"]["uid"] if old else "pub-%d" % next(self.names)
        meta = dict(body["metadata"], uid=uid, resourceVersion=str(next(self.versions)))
        stored = self.published[key] = dict(body, metadata=meta)
        if kind in self.caches:
            deliver(self.caches[kind], stored)
        return stored

    def replace(self, kind, namespace, body):
        return self.create(kind, namespace, body)

    def auth_credentials(self, namespace, name):
        self.calls += 1
        raise LookupError("no auth in this bench")


# Where the flat package's files of revisions before the layer folders (issue 30) are now: a
# base's pool loop imports its siblings by those names.
FLAT_NAMES = {
    "api": "api",
    "collection": "collection",
    "conditions": "kube.conditions",
    "informer": "kube.informer",
    "kube": "kube.client",
    "loops": "loops.periodic",
    "pool_auth": "pool.auth",
    "pool_kube": "pool.kube_calls",
    "pool_members": "pool.members",
    "pool_metrics": "telemetry.pool_metrics",
    "pool_model": "pool.model",
    "pool_publish": "pool.publish",
    "pool_rollout": "pool.rollout",
    "pool_spread": "pool.spread",
    "pool_status": "pool.status",
    "workqueue": "kube.workqueue",
}


def flat_imports(text: str) -> str:
    """A flat-package file's sibling imports, spelled against this tree's modules."""
    lines = text.split("\n")
    nodes = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ImportFrom) and n.level == 1]
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        if node.module:
            names = ", ".join(a.name + (" as " + a.asname if a.asname else "") for a in node.names)
            new = ["from egress_proxies_controller.%s import %s" % (FLAT_NAMES[node.module], names)]
        else:
            new = [
                "import egress_proxies_controller.%s as %s" % (FLAT_NAMES[a.name], a.asname or a.name)
                for a in node.names
            ]
        lines[node.lineno - 1 : node.end_lineno] = new
    text = "\n".join(lines)
    return text.replace("module_utils import pool_split", "module_utils.runners import pool_split")


def base_source(rev: str) -> str:
    """The pool loop's file at ``rev``: ``pool/controller.py``, or ``pool_reconciler.py`` before
    the layer folders, whose sibling imports are then pointed at this tree's modules."""
    for path in ("pool/controller.py", "pool_reconciler.py"):
        done = subprocess.run(
            ["git", "-C", ROOT, "show", "%s:controller/egress_proxies_controller/%s" % (rev, path)],
            capture_output=True,
            text=True,
            check=False,  # a revision without this path: try the next
        )
        if done.returncode == 0:
            if path == "pool_reconciler.py":
                return flat_imports(done.stdout)
            return done.stdout
    raise SystemExit("no pool loop at %s" % rev)


def load_base(rev: str) -> types.ModuleType:
    """The pool loop as of ``rev``, as a module of this tree's package."""
    text = base_source(rev)
    path = os.path.join(tempfile.mkdtemp(prefix="pool-steady-"), "controller_base.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    # in the pool package, where a layered file's relative imports (``..kube``, ``.publish``) resolve
    name = "egress_proxies_controller.pool.controller_base"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def pool_object(i: int, members: int) -> dict:
    return {
        "apiVersion": "crawl.example.com/v1alpha1",
        "kind": "ProxyPool",
        "metadata": {
            "name": "pool-%03d" % i,
            "namespace": "ns-%d" % (i % 10),
            "uid": "pool-uid-%d" % i,
            "generation": 1,
            "resourceVersion": "1",
        },
        "spec": {
            "replicas": members,
            "template": {"port": 3128},
            "spread": [{"name": "main", "provider": PROVIDER}],
        },
    }


class BasePublisher(Publisher):
    """This tree's Publisher as a base tree's loop constructs it: ``Publisher(pools)`` before
    issue 38, without caches (every published object read back with a get, as its Publisher
    did), or ``Publisher(pools, caches)`` since."""

    def __init__(self, pool_kube, caches: dict | None = None):
        super().__init__(pool_kube, caches or {})


#: the published objects' kinds by resource: a base's informers of them were a list
KINDS = {"services": "Service", "endpointslices": "EndpointSlice"}


def published_caches(ctl) -> dict:
    """The informers of what the pools publish, by kind, which the store's writes reach as their
    watch events would: by kind since issue 38, a list before, none before those informers."""
    published = getattr(ctl, "published", None) or {}
    if isinstance(published, dict):
        return published
    return {KINDS[informer.resource]: informer for informer in published}


def controller(module, clock: Clock):
    proxies = informer_mod.Informer(None, None, lambda _key: None, lister=lambda *a, **kw: None)
    proxies.synced.set()
    kube = types.SimpleNamespace(
        custom=None, core=None, api_client=k8s.ApiClient(), timeout=10, event=lambda *a, **kw: None
    )
    args = [kube, proxies, lambda: [PROVIDER], PoolMetrics(CollectorRegistry()), None]
    if module is not pool_reconciler:  # a base tree: built as its own signature asks
        # its loop imported this tree's Publisher; one from before issue 38 calls Publisher(pools)
        module.Publisher = BasePublisher
        if "queue" in inspect.signature(module.PoolController.__init__).parameters:
            args.insert(2, types.SimpleNamespace(add=lambda _key: None))  # the Proxy queue, before issue 38
    ctl = module.PoolController(*args, interval=0)
    for informer in (proxies, ctl.informer):
        if not hasattr(informer, "store"):  # a base from before 939ad46 stores its own writes
            informer.store = functools.partial(informer.apply_event, "MODIFIED")
    ctl.pools = MemoryPoolKube()
    ctl.pools.proxies, ctl.pools.pool_informer = proxies, ctl.informer
    ctl.pools.caches = published_caches(ctl)
    for informer in ctl.pools.caches.values():
        informer.synced.set()
    if module is pool_reconciler:
        ctl.publisher = Publisher(ctl.pools, ctl.published)
    else:  # the caches only when its loop gives them to its Publisher (since issue 38)
        given = ctl.published if isinstance(getattr(ctl, "published", None), dict) else None
        ctl.publisher = BasePublisher(ctl.pools, given)
    ctl.auth.kube = ctl.pools
    if not hasattr(ctl.auth, "credentials"):  # the base asks PoolAuth.credentials (now reader)
        ctl.auth.credentials = lambda _pool, _name, current: current  # no pool here has auth
    ctl.informer.synced.set()
    if hasattr(ctl, "due"):  # the event-driven loop: its queue on the simulated clock
        ctl.due = WorkQueue(base_delay=1.0, max_delay=60.0, clock=clock)
        ctl.informer.on_change = ctl.due.add
    return ctl, proxies


def settle(ctl, proxies, pools: int, members: int) -> None:
    """Pools stored, members made and turned Ready until a round writes nothing."""
    for i in range(pools):
        obj = pool_object(i, members)
        deliver(ctl.informer, obj)
        ctl.informer.on_change(informer_mod.key_of(obj))
    made = set()
    for _round in range(50):
        before = ctl.pools.calls - ctl.pools.reads  # writes: every reconcile reads what it published
        ctl.round()
        for key in proxies.cache_keys():
            obj = proxies.get(key)
            if key in made or obj is None:
                continue
            made.add(key)
            ready = {"type": "Ready", "status": "True", "reason": "Running", "message": ""}
            status = {"state": "Running", "ip": "10.0.%d.%d" % (len(made) // 250, len(made) % 250)}
            status.update(provider=PROVIDER, conditions=[ready])
            meta = dict(obj["metadata"], resourceVersion="2")
            deliver(proxies, dict(obj, metadata=meta, status=status))
        if ctl.pools.calls - ctl.pools.reads == before and len(made) == pools * members:
            return
    raise SystemExit("the pools did not settle")


def hold(ctl, proxies, clock: Clock, seconds: int) -> dict:
    reads = [0]
    get = proxies.get

    def counted(key):
        reads[0] += 1
        return get(key)

    proxies.get = counted
    reconciled = [0]
    reconcile = ctl.reconcile

    def counted_reconcile(obj, member_objs):
        reconciled[0] += 1
        return reconcile(obj, member_objs)

    ctl.reconcile = counted_reconcile
    calls = ctl.pools.calls
    cpu = time.process_time()
    for _second in range(seconds):
        clock.now += 1.0
        ctl.round()
    cpu = time.process_time() - cpu
    return {
        "cpu_ms_per_s": 1000.0 * cpu / seconds,
        "reconciles": reconciled[0],
        "cache_reads": reads[0],
        "api_calls": ctl.pools.calls - calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--pools", type=int, default=100)
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--seconds", type=int, default=120)
    parser.add_argument("--base", default="81faa79", help="the commit whose pool loop is compared")
    args = parser.parse_args()
    results = {}
    for label, module in (
        ("base (%s)" % args.base, load_base(args.base)),
        ("this tree", pool_reconciler),
    ):
        clock = Clock(1000.0)
        ctl, proxies = controller(module, clock)
        started = time.monotonic()
        settle(ctl, proxies, args.pools, args.members)
        print(
            "%-20s settled %d pools, %d Proxies in %.1f s"
            % (label, args.pools, len(proxies.cache_keys()), time.monotonic() - started),
            flush=True,
        )
        results[label] = hold(ctl, proxies, clock, args.seconds)
    print("\nover %d simulated seconds, nothing changing:" % args.seconds)
    print("%-20s %14s %11s %12s %10s" % ("loop", "CPU ms per s", "reconciles", "cache reads", "API calls"))
    for label, r in results.items():
        print(
            "%-20s %14.2f %11d %12d %10d"
            % (label, r["cpu_ms_per_s"], r["reconciles"], r["cache_reads"], r["api_calls"])
        )
    base, tree = list(results.values())
    print(
        "\nbase / this tree: CPU %.1fx, reconciles %.1fx, cache reads %s"
        % (
            base["cpu_ms_per_s"] / max(tree["cpu_ms_per_s"], 1e-9),
            base["reconciles"] / max(tree["reconciles"], 1),
            "%.0fx" % (base["cache_reads"] / tree["cache_reads"])
            if tree["cache_reads"]
            else "(none in this tree)",
        )
    )


if __name__ == "__main__":
    main()
