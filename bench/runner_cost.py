"""Benchmark: the fixed cost of one ansible run, from a bare import to the controller's batch.

Issue 27: the controller pays one ansible-runner run per batch, and the suite pays one
``ansible-playbook`` per module test, so this cost is both the product's and the CI's. Measured
side by side, in one process, on the same machine, each case ``--repeat`` times (median):

- ``import``: ``python -c 'import ansible'`` (the interpreter and the package, nothing else);
- ``empty-play``: an empty play through ``ansible-playbook`` (ansible-core's own floor);
- ``info-play``: one ``proxy_info`` on the local provider through ``ansible-playbook``;
- ``controller-run``: the same ``proxy_info`` as the controller runs it: its batch playbook
  through ansible-runner (``Executor.run_playbook``, the controller's own code and settings),
  one get of one id.

The last two run as they run now (the module started from the installed collection,
plugins/plugin_utils/direct_module.py; the controller's ``ansible-playbook`` forked from its fork
server, runs/fork_server.py) and, marked ``(AnsiballZ)``, with ``EGRESS_PROXIES_DIRECT_MODULES=false``
(ansible-core's zipped module, and no fork server); ``controller-run (no fork server)`` is the
controller's run with ``--no-ansible-fork-server``.

CPU-seconds are the children's user+system time (``RUSAGE_CHILDREN``) plus, for the runner
case, this process's own (the runner reads events in-process) and the fork server's with its
reaped children (each run's forked ``ansible-playbook``, its workers and modules). ``--profile``
also samples one controller run with py-spy (every process it starts) and prints where its CPU
goes by phase.

Usage: .venv/bin/python bench/runner_cost.py [--repeat 7] [--profile]
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "controller"))
BIN = os.path.dirname(sys.executable)
COLLECTIONS = os.path.join(ROOT, ".venv", "collections")

EMPTY_PLAY = """\
- hosts: localhost
  gather_facts: false
  tasks: []
"""

INFO_PLAY = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - crawl.egress_proxies.proxy_info:
        provider: local
        ids: [local/proxy-aaaaaaaaaaaaaaaa]
        providers_file: %s
"""

# Where a sampled frame puts a CPU sample (the first rule that matches a frame of the stack).
PHASES = (
    # Started directly from the collection, the module process runs ansible-core's loader.
    ("module process: imports", ("run_module (ansible/module_utils/_internal/_ansiballz", "_find_and_load")),
    ("module process: the module's work", ("run_module (ansible/module_utils/_internal/_ansiballz",)),
    # With pipelining (as the controller runs) the module's AnsiballZ wrapper comes on stdin.
    ("module process: imports (unpacked from the zip, compiled)", ("_ansiballz_main", "_find_and_load")),
    ("module process: the module's work", ("_ansiballz_main",)),
    ("AnsiballZ packaging (recursive_finder)", ("recursive_finder", "_find_module_utils")),
    ("task execution (action, templating)", ("TaskExecutor",)),
    ("inventory", ("inventory/manager",)),
    ("plugin and collection loading", ("PluginLoader",)),
    ("config and plugin docs (YAML)", ("yaml/",)),
    ("callbacks and events", ("callback",)),
    ("ansible-playbook start-up imports", ("ansible-playbook", "_find_and_load")),
    ("ansible-runner in the controller", ("ansible_runner",)),
)


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    servers = sum(_process_tree_cpu(e.launcher.server_pid) for e in EXECUTORS if e.launcher.server_pid)
    return children.ru_utime + children.ru_stime + own.ru_utime + own.ru_stime + servers


def _process_tree_cpu(pid: int) -> float:
    """A live fork server's CPU and its reaped children's (each run's ansible-playbook), which
    reach this process's RUSAGE_CHILDREN only once the server itself has exited."""
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rpartition(")")[2].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def _env() -> dict:
    return dict(
        os.environ,
        PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
    )


def measure(cases: tuple, repeat: int) -> dict:
    """Median (cpu, wall) of ``repeat`` calls of each case, after one warm-up call of each. The
    cases take turns (one call of each per round), so a slow spell of the machine (a shared
    host's) weighs on every case alike, not on whichever ran then."""
    samples = {name: ([], []) for name, _run in cases}
    for _name, run in cases:
        run()
    for _round in range(repeat):
        for name, run in cases:
            c0, w0 = _cpu(), time.monotonic()
            run()
            samples[name][0].append(_cpu() - c0)
            samples[name][1].append(time.monotonic() - w0)
    return {name: (statistics.median(cpu), statistics.median(wall)) for name, (cpu, wall) in samples.items()}


PACKAGED = {"EGRESS_PROXIES_DIRECT_MODULES": "false"}  # ansible-core's AnsiballZ path
EXECUTORS = []  # closed at the end: each may hold a fork server


def command(argv: list, extra: dict | None = None):
    def run():
        env = dict(_env(), **(extra or {}))
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    return run


def controller_run(work: str, providers_file: str, extra: dict | None = None, fork_server: bool = True):
    os.environ.update(_env())
    from egress_proxies_controller.runs.executor import Executor
    from egress_proxies_controller.runs.playbooks import PLAYBOOK

    runner_dir = os.path.join(work, "runner-%d" % len(os.listdir(work)))
    executor = Executor(runner_dir, providers_file, collections_path=COLLECTIONS, fork_server=fork_server)
    EXECUTORS.append(executor)
    payload = {
        "instances": [],
        "gets": [{"provider": "local", "ids": ["local/proxy-aaaaaaaaaaaaaaaa"]}],
        "lists": [],
        "concurrency": 16,
        "call_timeout": 30,
    }

    def run():
        with mock.patch.dict(os.environ, extra or {}):  # the runner's ansible-playbook inherits it
            results = executor.run_playbook("batch.yml", PLAYBOOK, payload, "bench")
        if results.failure or not results.get("gets"):
            sys.exit("controller run failed: %s" % (results.failure or results))

    return run


def profile() -> None:
    """Sample one controller run (this process and every child) with py-spy; print by phase."""
    spy = shutil.which("py-spy", path=BIN)
    if not spy:
        sys.exit("--profile needs py-spy (requirements-dev.txt)")
    handle, raw = tempfile.mkstemp(suffix=".txt")
    os.close(handle)
    script = "import sys; sys.path[:0] = %r; import runner_cost as b; b._profiled()" % (
        [os.path.dirname(os.path.abspath(__file__)), *sys.path],
    )
    argv = [spy, "record", "-r", "500", "-f", "raw", "--subprocesses", "-o", raw, "--"]
    subprocess.run(
        [*argv, sys.executable, "-c", script],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    total, phases = 0, collections.Counter()
    with open(raw) as handle:
        for line in handle:
            stack, _sep, count = line.rpartition(" ")
            total += int(count)
            phases[_phase(stack)] += int(count)
    if not os.environ.get("RUNNER_COST_KEEP"):
        os.unlink(raw)
    else:
        print("raw samples kept in", raw)
    print("\nwhere one controller run's CPU goes (py-spy, %d samples at 500 Hz):" % total)
    for phase, count in phases.most_common():
        print("  %-45s %5.1f %%  (%.2f s)" % (phase, 100.0 * count / total, count / 500.0))


def _phase(stack: str) -> str:
    for phase, needles in PHASES:
        if all(n in stack for n in needles):
            return phase
    return "other"


def _profiled() -> None:
    work = tempfile.mkdtemp(prefix="egress-runner-cost-")
    try:
        controller_run(work, _providers(work))()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _providers(work: str) -> str:
    path = os.path.join(work, "providers.yml")
    with open(path, "w") as handle:
        handle.write(
            "providers:\n  - name: local\n    type: local\n    local:\n"
            "      stateDir: %s\n      addressRange: 127.93.0.0/24\n" % os.path.join(work, "state")
        )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="also sample one controller run with py-spy")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="egress-runner-cost-")
    try:
        providers_file = _providers(work)
        empty, info = os.path.join(work, "empty.yml"), os.path.join(work, "info.yml")
        with open(empty, "w") as handle:
            handle.write(EMPTY_PLAY)
        with open(info, "w") as handle:
            handle.write(INFO_PLAY % providers_file)
        playbook = os.path.join(BIN, "ansible-playbook")
        cases = (
            ("import", command([sys.executable, "-c", "import ansible"])),
            ("empty-play", command([playbook, empty])),
            ("info-play (AnsiballZ)", command([playbook, info], PACKAGED)),
            ("info-play", command([playbook, info])),
            ("controller-run (AnsiballZ)", controller_run(work, providers_file, PACKAGED, False)),
            ("controller-run (no fork server)", controller_run(work, providers_file, fork_server=False)),
            ("controller-run", controller_run(work, providers_file)),
        )
        print("%d runs each (median), %s, %d CPUs" % (args.repeat, os.uname().machine, os.cpu_count()))
        print("%-32s %10s %10s %12s" % ("case", "CPU s", "wall s", "CPU / empty"))
        figures = measure(cases, args.repeat)
        for name, _run in cases:
            print("%-32s %10.2f %10.2f" % ((name,) + figures[name]), end="")
            if name != "import":
                print(" %11.2fx" % (figures[name][0] / figures["empty-play"][0]))
            else:
                print()
        if args.profile:
            profile()
    finally:
        for executor in EXECUTORS:
            executor.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
