"""The collection tarball ``ansible-galaxy collection build`` makes: what a user needs and nothing else.

It ships the plugins, roles, playbooks, metadata (with the dependency files the EE metadata
names), docs, the controller's manifests and the changelog (CHANGELOG.rst/.md and changelogs/,
as collections ship it), and of tests only ansible-test's tests/config.yml; the
project's tooling (hack/, Makefile, lint and tool configs, molecule scenarios, the EE recipes),
its test suites, ansible-test's ignore files (each a warning of Galaxy's importer; they serve
ansible-test in this repository) and the controller's code stay out (galaxy.yml
``build_ignore``). The installed tarball then works on its own beside the collections it
declares (kubernetes.core, ansible.posix, which a user already has; here copied from the
working tree's collections path, where hack/bootstrap.sh put the pinned versions):
ansible-galaxy resolves them, ansible-doc reads every plugin and the inventory plugin lists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

from . import inventory_cli as cli

pytestmark = [pytest.mark.playbook]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)

TOP_LEVEL = {
    "MANIFEST.json",
    "FILES.json",
    "README.md",
    "LICENSE",
    "CHANGELOG.md",
    "CHANGELOG.rst",
    "changelogs",
    "requirements.txt",
    "bindep.txt",
    "meta",
    "plugins",
    "roles",
    "playbooks",
    "docs",
    "controller",
    "tests",
}
EXCLUDED = (
    "hack/",
    "Makefile",
    "extensions/",
    "execution-environment.yml",
    "execution-environment-2.16.yml",
    "pyproject.toml",
    "requirements-dev.txt",
    ".ansible-lint",
    ".gitignore",
    "bench/",
    "controller/egress_proxies_controller/",
    "controller/Containerfile",
    "controller/requirements.txt",
    "controller/pyproject.toml",
    "tests/unit/",
    "tests/contract/",
    "tests/integration/",
    "tests/controller/",
    "tests/fakes/",
    "tests/cluster/",
    "tests/guest/",
    "tests/roles/",
    "tests/faults/",
    "tests/matrix/",
    "tests/docs/",
    "tests/listen_ports.py",
    "tests/conftest.py",
    "tests/sanity/",
    "changelogs/.plugin-cache.yaml",
)
EXPECTED = (
    "meta/runtime.yml",
    "meta/execution-environment.yml",
    "plugins/inventory/proxies.py",
    "plugins/plugin_utils/provider_session.py",
    "plugins/modules/proxy_instance.py",
    "plugins/module_utils/registry.py",
    "plugins/doc_fragments/providers.py",
    "roles/proxy/meta/argument_specs.yml",
    "playbooks/demo.yml",
    "controller/config/default/kustomization.yaml",
    "docs/inventory.md",
    "tests/config.yml",
    "changelogs/changelog.yaml",
    "changelogs/config.yaml",
)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("galaxy-build")
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out), ROOT],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return str(out / ("crawl-egress_proxies-%s.tar.gz" % version))


def names_in(path: str) -> list:
    with tarfile.open(path) as archive:
        return [m.name + ("/" if m.isdir() else "") for m in archive.getmembers()]


def test_the_tarball_ships_what_a_user_needs_and_nothing_else(tarball):
    names = names_in(tarball)
    assert {n.split("/")[0] for n in names} == TOP_LEVEL
    for expected in EXPECTED:
        assert expected in names, expected
    shipped_excluded = [n for n in names if n.startswith(EXCLUDED) or n.rstrip("/") + "/" in EXCLUDED]
    assert shipped_excluded == []
    assert sorted(n for n in names if n.startswith("tests/")) == [
        "tests/",
        "tests/config.yml",
    ]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or ".egg-info" in n]
    assert [n for n in names if n.startswith("controller/") and not n.startswith("controller/config/")] == [
        "controller/"
    ]


DEPENDENCIES = ("kubernetes/core", "ansible/posix")


def test_the_installed_tarball_works_on_its_own(tarball, tmp_path):
    collections = tmp_path / "collections"
    for dependency in DEPENDENCIES:
        shutil.copytree(
            os.path.join(ROOT, ".venv", "collections", "ansible_collections", dependency),
            collections / "ansible_collections" / dependency,
        )
    env = {"ANSIBLE_COLLECTIONS_PATH": str(collections)}  # never the working tree's link
    install = cli.run(
        "ansible-galaxy", "collection", "install", "--force", "-p", str(collections), tarball, env=env
    )
    assert install.rc == 0, install.stdout + install.stderr
    # The declared dependencies were resolved against the installed copies (no Galaxy here).
    for name in ("kubernetes.core", "ansible.posix"):
        assert "'%s:" % name in install.stdout and "is already installed" in install.stdout, install.stdout
    assert (collections / "ansible_collections" / "crawl" / "egress_proxies" / "MANIFEST.json").exists()
    doc = cli.run("ansible-doc", "-t", "inventory", "crawl.egress_proxies.proxies", env=env)
    assert doc.rc == 0, doc.stderr
    assert str(collections) in doc.stdout  # the installed copy, not the working tree
    providers = cli.write_providers(
        tmp_path,
        {"providers": [{"name": "empty", "type": "local", "local": {"stateDir": str(tmp_path / "state")}}]},
    )
    listed = cli.inventory(cli.write_source(tmp_path, providers_file=providers), "--graph", env=env)
    assert listed.rc == 0, listed.stderr
    assert "  |--@proxies:" in listed.stdout.splitlines()
