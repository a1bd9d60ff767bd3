"""The collections the roles use are declared (galaxy.yml, execution-environment.yml), and the
versions hack/bootstrap.sh installs (hack/collections.txt) satisfy what galaxy.yml declares.

The declaration is what a user's ``ansible-galaxy collection install`` and ansible-builder read;
the pins are what the suite tests; a drift between them would ship a claim nobody tested.
"""

from __future__ import annotations

import glob
import os
import re

import yaml
from ansible.galaxy.dependency_resolution.versioning import meets_requirements

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pins() -> dict:
    pins = {}
    with open(os.path.join(ROOT, "hack", "collections.txt"), encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#")[0].strip()
            if line:
                name, version = line.split("==", 1)
                pins[name] = version
    return pins


def _fqcns_used_by_roles() -> set:
    used = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")):
        with open(path, encoding="utf-8") as handle:
            used |= set(
                re.findall(r"^\s*-?\s*([a-z0-9_]+\.[a-z0-9_]+)\.[a-z0-9_]+:\s*$", handle.read(), re.M)
            )
    return used - {"ansible.builtin", "crawl.egress_proxies"}


def test_galaxy_declares_every_collection_a_role_uses_and_the_pins_satisfy_it():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        declared = yaml.safe_load(handle)["dependencies"]
    used = _fqcns_used_by_roles()
    assert used == {"kubernetes.core", "ansible.posix"}, used
    assert set(declared) == used
    pins = _pins()
    assert pins["ansible"].startswith("12."), "ansible 12.x is the package that pairs with ansible-core 2.19"
    for name, requirement in declared.items():
        assert meets_requirements(pins[name], requirement.replace(" ", "")), (name, pins[name], requirement)


def test_the_execution_environment_installs_the_same_collections():
    with open(os.path.join(ROOT, "execution-environment.yml"), encoding="utf-8") as handle:
        ee = yaml.safe_load(handle)
    listed = {c["name"]: c.get("version") for c in ee["dependencies"]["galaxy"]["collections"]}
    pins = _pins()
    for name in ("kubernetes.core", "ansible.posix"):
        assert listed[name] == pins[name], (name, listed.get(name))
