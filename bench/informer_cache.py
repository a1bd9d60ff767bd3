"""Benchmark: what the informer's cache costs per Proxy, trimmed against untrimmed, and what
paging the initial LIST saves at its peak.

Starts the test control plane (tests/cluster), creates N Proxies the way users do (server-side
apply, so the API server records managedFields, and kubectl's last-applied-configuration
annotation with an inline cloud-init of a realistic size), then lists them through the
controller's Informer and measures with tracemalloc:

* bytes held per cached Proxy, with the cache trimmed (the controller) and untrimmed (the
  objects as listed),
* the peak of Python memory during the initial list, paged (``--page-size``) and unpaginated,
* seconds for each list.

Usage: .venv/bin/python bench/informer_cache.py [--count 2000] [--page-size 500]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import json
import os
import sys
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "controller")]

import workdirs  # noqa: E402
from cluster import kube_testlib  # noqa: E402
from cluster.kube_cluster import ControlPlane  # noqa: E402
from egress_proxies_controller.kube import informer as informer_mod  # noqa: E402
from egress_proxies_controller.kube.client import Kube  # noqa: E402
from kubernetes import client as k8s  # noqa: E402

CLOUD_INIT = "#cloud-config\n" + "\n".join("# line %03d of a typical user-data file" % i for i in range(60))


def proxy_body(name: str) -> dict:
    spec = {"provider": "k8s", "port": 3128, "cloudInit": {"inline": CLOUD_INIT}}
    body = {
        "apiVersion": "crawl.example.com/v1alpha1",
        "kind": "Proxy",
        "metadata": {"name": name},
        "spec": spec,
    }
    body["metadata"]["annotations"] = {informer_mod.LAST_APPLIED: json.dumps(body)}
    return body


def create_proxies(admin, namespace: str, count: int) -> None:
    custom = k8s.CustomObjectsApi(admin)

    def apply(i: int) -> None:
        name = "p%05d" % i
        custom.patch_namespaced_custom_object(
            "crawl.example.com",
            "v1alpha1",
            namespace,
            "proxies",
            name,
            proxy_body(name),
            field_manager="bench",
            force=True,
            _content_type="application/apply-patch+yaml",
        )

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for done, _result in enumerate(pool.map(apply, range(count)), 1):
            if done % 500 == 0:
                print("  created %d/%d" % (done, count), file=sys.stderr, flush=True)


def measure(kube, namespace: str, page_size: int | None, trim: bool) -> dict:
    """One initial list into a fresh Informer: held bytes per object, peak bytes, seconds."""
    original = informer_mod.trimmed
    if not trim:
        informer_mod.trimmed = lambda obj: obj
    try:
        inf = informer_mod.Informer(kube, namespace, on_change=lambda key: None, page_size=page_size or 0)
        if page_size is None:
            inf._list_pages = lambda: _unpaged(kube, namespace)
        gc.collect()
        tracemalloc.start()
        started = time.monotonic()
        inf._list()
        seconds = time.monotonic() - started
        gc.collect()
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        informer_mod.trimmed = original
    count = len(inf.cache_keys())
    return {"count": count, "per_proxy": held / count, "peak": peak, "seconds": seconds}


def _unpaged(kube, namespace: str) -> tuple:
    listing = kube.list_proxies(namespace, _request_timeout=120)
    items = [informer_mod.trimmed(o) for o in listing.get("items", [])]
    return items, listing["metadata"]["resourceVersion"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--page-size", type=int, default=informer_mod.PAGE_SIZE)
    args = parser.parse_args()
    workdir = workdirs.make("bench-informer-")
    plane = ControlPlane(os.path.join(workdir, "cluster"))
    plane.start()
    try:
        admin = kube_testlib.api_client(plane.kubeconfig)
        kube_testlib.apply_proxy_crd(admin)
        namespace = kube_testlib.create_namespace(admin, prefix="bench")
        print(
            "creating %d Proxies (server-side apply, last-applied annotation)" % args.count, file=sys.stderr
        )
        create_proxies(admin, namespace, args.count)
        kube = Kube(admin)
        rows = [
            (
                "paged %d, trimmed (the controller)" % args.page_size,
                measure(kube, namespace, args.page_size, True),
            ),
            ("paged %d, untrimmed" % args.page_size, measure(kube, namespace, args.page_size, False)),
            ("unpaginated, trimmed", measure(kube, namespace, None, True)),
            ("unpaginated, untrimmed (before issue 18)", measure(kube, namespace, None, False)),
        ]
        print(
            "\n%d Proxies; command: %s" % (args.count, " ".join(["bench/informer_cache.py", *sys.argv[1:]]))
        )
        print("| initial list | held per Proxy | peak during the list | seconds |")
        print("|---|---|---|---|")
        for label, row in rows:
            print(
                "| %s | %.1f KiB | %.1f MiB | %.2f |"
                % (label, row["per_proxy"] / 1024, row["peak"] / 2**20, row["seconds"])
            )
        base, ours = rows[3][1], rows[0][1]
        print(
            "\ncache per Proxy: %.2fx smaller trimmed; initial list peak: %.2fx lower paged and trimmed"
            % (base["per_proxy"] / ours["per_proxy"], base["peak"] / ours["peak"])
        )
    finally:
        plane.stop()


if __name__ == "__main__":
    main()
