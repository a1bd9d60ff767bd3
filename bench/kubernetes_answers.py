"""Benchmark: the kubernetes provider's list and get, reading the API's JSON (helpers/kube_answers.py) against
the client's models (what it did before).

Starts the test control plane with kwok, creates N Pods through the provider (so they carry the
provider's labels), then reads them R times each way, measuring this process's CPU seconds:

* ``list_by_tag`` (one paginated list of every Pod of the installation, what a poll round or GC
  reads) against the same list deserialized by the client into ``V1PodList`` models;
* ``get`` of every Pod against ``read_namespaced_pod`` deserialized into ``V1Pod``.

Both sides make the same requests to the same API server; only the reading of the answer
differs, so the wall time includes the API server's share and the CPU seconds are the client's.

Usage: .venv/bin/python bench/kubernetes_answers.py [--count 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [
    os.path.join(ROOT, "tests"),
    os.path.join(ROOT, "controller"),
    os.path.join(ROOT, "bench"),
    os.path.join(ROOT, ".venv", "collections"),
]

import controller_scale  # noqa: E402
import workdirs  # noqa: E402
from cluster import kube_testlib  # noqa: E402

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config  # noqa: E402
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, names  # noqa: E402
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline  # noqa: E402
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.provider import (  # noqa: E402
    KubernetesProvider,
)
from controller import e2e_lib  # noqa: E402


def measured(work) -> tuple:
    """(wall seconds, CPU seconds of this process) of ``work()``."""
    wall, cpu = time.monotonic(), time.process_time()
    work()
    return time.monotonic() - wall, time.process_time() - cpu


def models_list(provider, selector: str) -> int:
    """The list as the provider read it before: every page deserialized into models."""
    core = provider._core(Deadline(60))
    count, token = 0, None
    while True:
        kwargs = {"label_selector": selector, "limit": 500}
        if token:
            kwargs["_continue"] = token
        page = core.list_pod_for_all_namespaces(_request_timeout=60, **kwargs)
        count += len(page.items)
        token = page.metadata._continue
        if not token:
            return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--count", type=int, default=1000, help="Pods created (default 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="lists each way (default 5)")
    args = parser.parse_args()
    workdir = workdirs.make("bench-answers-")
    plane, admin = controller_scale.kwok_plane(workdir, args.count + 50)
    try:
        namespace = kube_testlib.create_namespace(admin, prefix="answers")
        kubeconfig = e2e_lib.service_account_kubeconfig(admin, plane, os.path.join(workdir, "sa.kubeconfig"))
        parsed = config.parse(controller_scale.kwok_providers(kubeconfig, "answers"))
        spec = parsed.find("k8s")
        provider = KubernetesProvider(spec.name, parsed.installation, spec.block)
        print("creating %d Pods through the provider ..." % args.count, flush=True)
        ids = [
            provider.create(
                contract.CreateRequest(name="p%05d" % i, uid="u%05d" % i, namespace=namespace), Deadline(60)
            )
            for i in range(args.count)
        ]
        selector = "%s=%s,%s=%s" % (
            names.LABEL_MANAGED,
            names.LABEL_MANAGED_VALUE,
            names.LABEL_INSTALL,
            parsed.installation,
        )
        assert models_list(provider, selector) == args.count, "the models' list missed Pods"
        assert len(provider.list_by_tag(Deadline(60))) == args.count, "the provider's list missed Pods"
        rows = [
            (
                "list x%d (%d Pods)" % (args.rounds, args.count),
                measured(lambda: [models_list(provider, selector) for _round in range(args.rounds)]),
                measured(lambda: [provider.list_by_tag(Deadline(60)) for _round in range(args.rounds)]),
            ),
            (
                "get x%d" % args.count,
                measured(
                    lambda: [
                        provider._core(Deadline(60)).read_namespaced_pod(*reversed(i.split("/"))) for i in ids
                    ]
                ),
                measured(lambda: [provider.get(i, Deadline(60)) for i in ids]),
            ),
        ]
        print("\n| read | models: wall, CPU-s | JSON (helpers/kube_answers.py): wall, CPU-s | CPU ratio |")
        print("|---|---|---|---|")
        for label, (m_wall, m_cpu), (j_wall, j_cpu) in rows:
            print(
                "| %s | %.2f s, %.2f | %.2f s, %.2f | %.2fx |"
                % (label, m_wall, m_cpu, j_wall, j_cpu, m_cpu / j_cpu if j_cpu else float("inf"))
            )
        print(
            "\nCPU per Pod read: list %.2f ms (models) against %.2f ms (JSON)"
            % (
                1000 * rows[0][1][1] / (args.rounds * args.count),
                1000 * rows[0][2][1] / (args.rounds * args.count),
            )
        )
    finally:
        plane.stop()


if __name__ == "__main__":
    main()
