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

``--matrix`` (issue 39) measures instead a module task's fixed cost on every ansible-core minor
of the version matrix (tests/matrix/versions.env), with each cell's cached virtualenv
(tests/matrix/venv.sh builds a missing one): ``empty-play`` and ``info-play`` (and ``info-play
(AnsiballZ)``) through that cell's ``ansible-playbook``, every case of every cell taking turns in
one interleaved run, then a side-by-side table (CPU-seconds, wall, info-play / empty-play). A
cell without a suitable Python, or whose info-play fails, is listed with the reason and left
out of the measurement.

Usage: .venv/bin/python bench/runner_cost.py [--repeat 7] [--profile | --matrix]
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


def matrix_cells() -> list:
    """(minor, venv or None, why not) for every cell of tests/matrix/versions.env."""
    versions = os.path.join(ROOT, "tests", "matrix", "versions.env")
    with open(versions, encoding="utf-8") as handle:
        line = next(x for x in handle if x.startswith("MATRIX_CELLS="))
    cells = []
    for minor in line.split("=", 1)[1].strip().strip('"').split():
        proc = subprocess.run(
            [os.path.join(ROOT, "tests", "matrix", "venv.sh"), minor],
            capture_output=True,
            text=True,
            check=False,
        )
        why = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        cells.append((minor, proc.stdout.split()[-1] if proc.returncode == 0 else None, why))
    return cells


def _cell_env(venv: str, work: str) -> dict:
    """A cell's ansible: its bin first on PATH, this tree's collection (linked under ``work``)
    first on the collections path, the cell's kubernetes.core and ansible.posix after it."""
    link = os.path.join(work, "collections", "ansible_collections", "crawl", "egress_proxies")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(ROOT, link)
    return {
        "PATH": os.path.join(venv, "bin") + os.pathsep + os.environ.get("PATH", ""),
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(work, "collections")
        + os.pathsep
        + os.path.join(venv, "collections"),
    }


def _version(venv: str) -> str:
    script = "import ansible.release as r, platform; print(r.__version__, platform.python_version())"
    out = subprocess.run(
        [os.path.join(venv, "bin", "python"), "-c", script], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def matrix(repeat: int, work: str, providers_file: str, empty: str, info: str) -> None:
    """Every cell's empty-play and info-play in one interleaved run, then the table."""
    cases, rows, left_out = [], [], []
    for minor, venv, why in matrix_cells():
        if venv is None:
            left_out.append((minor, why))
            continue
        env = _cell_env(venv, work)
        playbook = os.path.join(venv, "bin", "ansible-playbook")
        probe = subprocess.run(
            [playbook, info], env=dict(_env(), **env), capture_output=True, text=True, check=False
        )
        if probe.returncode != 0:
            lines = [x for x in (probe.stdout + probe.stderr).splitlines() if "ERROR" in x or "fatal" in x]
            left_out.append(
                (minor, "info-play fails: %s" % (lines or ["rc %d" % probe.returncode])[-1][:160])
            )
            continue
        names = tuple(
            "%s %s" % (case, minor) for case in ("empty-play", "info-play (AnsiballZ)", "info-play")
        )
        cases += [
            (names[0], command([playbook, empty], env)),
            (names[1], command([playbook, info], dict(env, **PACKAGED))),
            (names[2], command([playbook, info], env)),
        ]
        rows.append((minor, _version(venv), names))
    print(
        "%d runs each (median), every case of every cell in turn, %s, %d CPUs"
        % (repeat, os.uname().machine, os.cpu_count())
    )
    figures = measure(tuple(cases), repeat) if cases else {}
    print(
        "%-6s %-16s %9s %9s %9s %9s %9s %9s"
        % ("minor", "core / python", "empty", "info AZ", "info", "AZ/empty", "info/empty", "info wall")
    )
    for minor, version, (empty_name, packaged_name, info_name) in rows:
        e, p, i = figures[empty_name], figures[packaged_name], figures[info_name]
        print(
            "%-6s %-16s %8.2fs %8.2fs %8.2fs %8.2fx %9.2fx %8.2fs"
            % (minor, version.replace(" ", "/"), e[0], p[0], i[0], p[0] / e[0], i[0] / e[0], i[1])
        )
    for minor, why in left_out:
        print("%-6s not measured: %s" % (minor, why))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="also sample one controller run with py-spy")
    parser.add_argument(
        "--matrix", action="store_true", help="a module task's fixed cost on every ansible-core minor"
    )
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="egress-runner-cost-")
    try:
        providers_file = _providers(work)
        empty, info = os.path.join(work, "empty.yml"), os.path.join(work, "info.yml")
        with open(empty, "w") as handle:
            handle.write(EMPTY_PLAY)
        with open(info, "w") as handle:
            handle.write(INFO_PLAY % providers_file)
        if args.matrix:
            matrix(args.repeat, work, providers_file, empty, info)
            return
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
