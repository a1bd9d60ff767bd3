"""How the controller imports the collection's module_utils (collection.py): through ansible-core's
own collection loader and ansible's collections path, with one line when the collection is not
there, and never in the fork server before it adopts a run's environment.

Each case is a fresh interpreter: the test process already has the collection on sys.path
(tests/conftest.py), which would hide what an installed controller sees."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".venv", "collections")


def _python(code: str, collections: str, cwd: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHONPATH"))}
    env.update(ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false")
    argv = [sys.executable, "-c", code]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_module_utils_come_from_ansibles_collections_path_through_its_loader(tmp_path):
    code = (
        "from egress_proxies_controller.sharding import assignment; import sys; "
        "m = sys.modules['ansible_collections.crawl.egress_proxies.plugins.module_utils."
        "helpers.uid_shards']; "
        "print(type(m.__loader__).__name__, m.__file__)"
    )
    done = _python(code, COLLECTIONS, str(tmp_path))
    assert (done.returncode, done.stderr) == (0, "")  # nothing of ansible's in the controller's log
    loader, path = done.stdout.split()
    assert loader == "_AnsibleCollectionLoader"
    assert path.startswith(os.path.join(COLLECTIONS, "ansible_collections", "crawl", "egress_proxies"))


def test_without_the_collection_the_controller_says_where_it_looked_in_one_line(tmp_path):
    code = "import sys; from egress_proxies_controller.__main__ import main; " + (
        "sys.exit(main(['--providers-file', '/nonexistent/providers.yaml']))"
    )
    done = _python(code, str(tmp_path), str(tmp_path))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: the crawl.egress_proxies collection is not in ")
    assert "ANSIBLE_COLLECTIONS_PATH" in lines[0] and str(tmp_path) in lines[0]


def test_help_and_version_need_no_collection(tmp_path):
    """The README's ``--version``/``--help`` work in a shell without ANSIBLE_COLLECTIONS_PATH."""
    for flag in ("--version", "--help"):
        code = "from egress_proxies_controller.__main__ import main; main(['%s'])" % flag
        done = _python(code, str(tmp_path), str(tmp_path))
        assert done.returncode == 0 and done.stdout, done.stderr


@pytest.mark.parametrize("module", ["runs.fork_server", "runs.fork_client"])
def test_the_fork_server_reads_no_ansible_configuration_at_import(module, tmp_path):
    """fork_server adopts its first run's environment before ansible.constants is imported."""
    code = "import sys, egress_proxies_controller.%s; " % module + (
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ansible', 'ansible_collections')))"
    )
    done = _python(code, COLLECTIONS, str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# docs/architecture.md, import rule 11: the pure module_utils the controller imports, and the
# pure ones those import in turn (errors, excerpt, sha512_crypt).
RULE_11 = {"config.keys", "helpers.credential_files", "core.names", "core.placement", "runners.pool_split"}
RULE_11 |= {"runners.pool_target", "helpers.proxy_auth", "telemetry.tracing", "helpers.uid_shards"}
RULE_11 |= {"helpers.kube_answers", "config.yaml_reader", "helpers.bounded_file", "helpers.path_trust"}
RULE_11 |= {"core.squid_conf"}  # the CredentialsRotated Event states its AUTH_TTL_SECONDS
RULE_11_INDIRECT = {"core.errors", "helpers.excerpt", "helpers.sha512_crypt"}


def test_the_whole_controller_loads_exactly_the_module_utils_rule_11_names(tmp_path):
    code = (
        "import importlib, pkgutil, sys, egress_proxies_controller as p\n"
        "for m in pkgutil.walk_packages(p.__path__, 'egress_proxies_controller.'):\n"
        "    importlib.import_module(m.name)\n"
        "prefix = 'ansible_collections.crawl.egress_proxies.'\n"
        "print(' '.join(sorted(k[len(prefix):] for k in sys.modules if k.startswith(prefix))))\n"
    )
    done = _python(code, COLLECTIONS, str(tmp_path))
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    folders = {"plugins.module_utils." + name.rpartition(".")[0] for name in RULE_11 | RULE_11_INDIRECT}
    packages = {"plugins", "plugins.module_utils"} | folders
    assert loaded - packages == {"plugins.module_utils." + name for name in RULE_11 | RULE_11_INDIRECT}
