"""Shared pytest setup: make the collection importable as ``ansible_collections.crawl.egress_proxies``.

``make`` links the repository into ``.venv/collections`` (the ANSIBLE_COLLECTIONS_PATH the
playbook tests use too), so the tests import exactly the code ansible-playbook runs.
"""

import os
import sys

import pytest
from file_seconds import SHOWN, FileSeconds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".venv", "collections")
CONTROLLER = os.path.join(ROOT, "controller")
for path in (COLLECTIONS, CONTROLLER):
    if path not in sys.path:
        sys.path.insert(0, path)

# The Kubernetes test control plane's fixtures (kube_cluster, kube_admin, kube_namespace), for
# every test directory; nothing starts unless a test asks for one.
pytest_plugins = ("cluster.kube_fixture",)


_WORKER_ANNOUNCED: list = []  # under pytest-xdist: the lines the workers sent back (workeroutput)


def _announced() -> list:
    fixtures = sys.modules.get("contract.libvirt_fixtures")
    return list(getattr(fixtures, "ANNOUNCED", []))


def pytest_sessionfinish(session):
    """A pytest-xdist worker hands its announcements to the controller (workeroutput)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["libvirt_announced"] = _announced()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for line in getattr(node, "workeroutput", {}).get("libvirt_announced", []):
        if line not in _WORKER_ANNOUNCED:
            _WORKER_ANNOUNCED.append(line)


_FILE_SECONDS = FileSeconds()


_DOC_TESTS_RAN = []  # set when a test of tests/docs/ reported (xdist: in the controller too)


def pytest_runtest_logreport(report):
    """Every phase's duration, by file (in the xdist controller too: the workers' reports)."""
    _FILE_SECONDS.add(report)
    if report.nodeid.startswith("tests/docs/") and not _DOC_TESTS_RAN:
        _DOC_TESTS_RAN.append(report.nodeid)


def pytest_terminal_summary(terminalreporter, config):
    """Repeat which domain type the test hypervisors chose and why (contract.libvirt_fixtures),
    then the slowest test files (tests/file_seconds.py)."""
    for line in _announced() + _WORKER_ANNOUNCED:
        terminalreporter.write_line(line)
    if _DOC_TESTS_RAN and getattr(config, "workerinput", None) is None:
        from docs import tally  # the closing note of the documentation tests (issue 37)

        terminalreporter.write_sep("=", "documentation blocks")
        for line in tally.summary():
            terminalreporter.write_line(line)
    if getattr(config, "workerinput", None) is None and _FILE_SECONDS.seconds:
        try:
            written = _FILE_SECONDS.write(os.path.join(ROOT, "tests", "output"), list(config.args))
        except OSError as exc:  # a report, never a reason for the session to fail
            written = "not written: %s" % exc.strerror
        terminalreporter.write_sep("=", "slowest %d test files (all of them: %s)" % (SHOWN, written))
        for line in _FILE_SECONDS.lines():
            terminalreporter.write_line(line)


PROXY_PORT = 3128  # the default port of every proxy the tests start (the local provider's Squids)


def _wildcard_listeners(port: int) -> list:
    """Sockets listening on every address at ``port`` (from /proc/net/tcp and tcp6)."""
    found = []
    for table, any_address in (("/proc/net/tcp", "00000000"), ("/proc/net/tcp6", "0" * 32)):
        try:
            with open(table, encoding="ascii") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, _sep, hex_port = local.partition(":")
            if state == "0A" and address == any_address and int(hex_port, 16) == port:
                found.append(table)
    return found


def pytest_sessionstart(session):
    """Prove what the suite cannot set up itself: a process of the machine's own listening on
    *:3128 (a packaged Squid service, say) would make every local proxy on 127.x.y.z:3128 fail
    with "Address already in use", so say so once instead of failing a hundred tests."""
    taken = _wildcard_listeners(PROXY_PORT)
    if taken:
        pytest.exit(
            "port %d is taken on every address by a process of this machine (%s): the local "
            "provider's proxies cannot bind 127.x.y.z:%d; stop that service (e.g. a packaged "
            "squid.service) and run again" % (PROXY_PORT, ", ".join(taken), PROXY_PORT),
            returncode=4,
        )


CONTROL_PLANE_FIXTURE = "kube_cluster"


def _needs_control_plane(module) -> bool:
    """A test file needs the control plane when a test asks for ``kube_cluster`` or the file
    starts a ``ControlPlane`` of its own (the RBAC audit's, with audit flags)."""
    from cluster.kube_cluster import ControlPlane

    return any(isinstance(v, type) and issubclass(v, ControlPlane) for v in vars(module).values())


def pytest_collection_modifyitems(session, config, items):
    """Run the test files that need the Kubernetes control plane after all the others.

    ``make test`` builds the control plane in the background (hack/background.sh): on a fresh
    machine that takes 6-18 minutes, and the files that do not need it (unit, contract, modules,
    libvirt, guests) run meanwhile; the first test that asks for it waits for the build on its
    lock. Whole files move, in their order, so no module-scoped fixture is set up twice."""
    late = set()
    for item in items:
        module = getattr(item, "module", None)
        if module is None:
            continue
        if CONTROL_PLANE_FIXTURE in item.fixturenames or _needs_control_plane(module):
            late.add(module.__name__)

    def is_late(item) -> bool:
        module = getattr(item, "module", None)
        return module is not None and module.__name__ in late

    items[:] = [i for i in items if not is_late(i)] + [i for i in items if is_late(i)]
    if config.getoption("libvirt_on_one_worker"):
        import xdist_groups

        xdist_groups.check(items, str(config.rootpath))


def pytest_addoption(parser):
    parser.addoption(
        "--libvirt-on-one-worker",
        action="store_true",
        help="with -n: distribute by file, every file using the libvirt test hypervisors on one "
        "worker (tests/xdist_groups.py; `make pytest` uses it)",
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if not config.getoption("libvirt_on_one_worker"):
        return None
    import xdist_groups

    return xdist_groups.make_scheduler(config, log)
