"""Benchmark: one ``proxy_instance`` batch of N against a loop of N single-instance tasks.

Both sides create N real local proxies (Squid processes), wait until each serves, then delete
them, through real ``ansible-playbook`` runs; the figures are wall-clock seconds of each
playbook run and the ratio loop/batch. The loop is what a playbook without the batch form
does (``loop:`` over ``proxy_instance``): one module process per instance, each parsing the
config and building its provider again, one after another.

Usage: .venv/bin/python bench/batch_vs_loop.py [--count 50]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time

import workdirs  # the bench directory is on sys.path
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
PI = "crawl.egress_proxies.proxy_instance"


def play(workdir: str, defaults: dict, tasks: list, label: str) -> float:
    path = os.path.join(workdir, "%s.yml" % label)
    with open(path, "w") as handle:
        yaml.safe_dump(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": tasks,
                    "module_defaults": {"group/crawl.egress_proxies.egress_proxies": defaults},
                }
            ],
            handle,
        )
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".venv", "collections"),
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
    )
    start = time.monotonic()
    proc = subprocess.run([PLAYBOOK, path], capture_output=True, text=True, env=env, check=False)
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit("%s failed:\n%s" % (label, proc.stdout[-4000:]))
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=50)
    args = parser.parse_args()
    n = args.count
    workdir = workdirs.make("bench-batch-")
    figures = {}
    for mode in ("batch", "loop"):
        net = "127.%d.%d.0/24" % (random.randint(100, 250), random.randint(0, 255))
        defaults = {
            "providers": [
                {
                    "name": "local",
                    "type": "local",
                    "local": {"stateDir": os.path.join(workdir, mode), "addressRange": net},
                }
            ],
            "installation": "bench",
        }
        uids = ["bench-%s-%03d" % (mode, i) for i in range(n)]
        if mode == "batch":
            create = [
                {
                    "name": "create",
                    PI: {"provider": "local", "wait": True, "instances": [{"uid": u} for u in uids]},
                }
            ]
            delete = [
                {
                    "name": "delete",
                    PI: {
                        "provider": "local",
                        "state": "absent",
                        "wait": True,
                        "instances": [{"uid": u} for u in uids],
                    },
                }
            ]
        else:
            create = [
                {
                    "name": "create",
                    PI: {"provider": "local", "uid": "{{ item }}", "wait": True},
                    "loop": uids,
                }
            ]
            delete = [
                {
                    "name": "delete",
                    PI: {"provider": "local", "uid": "{{ item }}", "state": "absent", "wait": True},
                    "loop": uids,
                }
            ]
        print("%s: creating %d proxies ..." % (mode, n), flush=True)
        figures[(mode, "create")] = play(workdir, defaults, create, mode + "-create")
        print("%s: deleting %d proxies ..." % (mode, n), flush=True)
        figures[(mode, "delete")] = play(workdir, defaults, delete, mode + "-delete")
    print()
    print("proxy_instance, %d local proxies (real Squid), wall seconds per ansible-playbook run" % n)
    print("%-8s %10s %10s %8s" % ("phase", "batch", "loop", "loop/batch"))
    for phase in ("create", "delete"):
        b, lo = figures[("batch", phase)], figures[("loop", phase)]
        print("%-8s %10.1f %10.1f %7.1fx" % (phase, b, lo, lo / b))
    total_b = figures[("batch", "create")] + figures[("batch", "delete")]
    total_l = figures[("loop", "create")] + figures[("loop", "delete")]
    print("%-8s %10.1f %10.1f %7.1fx" % ("total", total_b, total_l, total_l / total_b))


if __name__ == "__main__":
    main()
