"""Shared pytest setup: make the collection importable as ``ansible_collections.crawl.egress_proxies``.

``make`` links the repository into ``.venv/collections`` (the ANSIBLE_COLLECTIONS_PATH the
playbook tests use too), so the tests import exactly the code ansible-playbook runs.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".venv", "collections")
CONTROLLER = os.path.join(ROOT, "controller")
for path in (COLLECTIONS, CONTROLLER):
    if path not in sys.path:
        sys.path.insert(0, path)

# The Kubernetes test control plane's fixtures (kube_cluster, kube_admin, kube_namespace), for
# every test directory; nothing starts unless a test asks for one.
pytest_plugins = ("cluster.kube_fixture",)


def pytest_terminal_summary(terminalreporter):
    """Repeat which domain type the test hypervisors chose and why (contract.libvirt_fixtures)."""
    fixtures = sys.modules.get("contract.libvirt_fixtures")
    for line in getattr(fixtures, "ANNOUNCED", []):
        terminalreporter.write_line(line)
