"""The controller as a Python package: ``pip install ./controller`` in a fresh virtualenv gives the
console script ``egress-proxies-controller`` and ``python -m egress_proxies_controller``, both
with every flag, and ``--version`` is the collection's version (galaxy.yml), which
controller/pyproject.toml must carry too.

The fresh virtualenv installs the package's declared dependencies with pip (from the package
registry, through pip's cache after the first run): nothing of the test's own environment leaks
in, so a dependency missing from pyproject.toml fails here, as it would for a user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def collection_version() -> str:
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["version"]


def test_one_version_for_the_collection_and_the_controller_package():
    with open(os.path.join(ROOT, "controller", "pyproject.toml"), "rb") as handle:
        project = tomllib.load(handle)["project"]
    assert project["version"] == collection_version()
    assert project["scripts"] == {"egress-proxies-controller": "egress_proxies_controller.__main__:main"}


def test_pip_install_in_a_fresh_venv_gives_the_console_script_and_the_version(tmp_path):
    source = tmp_path / "controller"  # a copy: building writes egg-info next to the sources
    shutil.copytree(
        os.path.join(ROOT, "controller"),
        source,
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "config"),
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(source)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"  # neither the repository nor the copy is on sys.path
    elsewhere.mkdir()
    expected = "egress-proxies-controller %s" % collection_version()
    for argv in (
        [str(venv / "bin" / "egress-proxies-controller")],
        [str(venv / "bin" / "python"), "-m", "egress_proxies_controller"],
    ):
        version = subprocess.run(
            [*argv, "--version"], capture_output=True, text=True, env=env, cwd=elsewhere, check=False
        )
        assert (version.returncode, version.stdout.strip()) == (0, expected), version.stderr
        helped = subprocess.run(
            [*argv, "--help"], capture_output=True, text=True, env=env, cwd=elsewhere, check=False
        )
        assert helped.returncode == 0, helped.stderr
        assert "--providers-file" in helped.stdout and "--leader-elect" in helped.stdout
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import egress_proxies_controller as c; print(c.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=elsewhere,
        check=True,
    )
    assert where.stdout.startswith(str(venv)), where.stdout  # the installed copy, not the sources


def test_the_readme_controller_commands_work_after_the_demo_set_up(tmp_path):
    """`make demo`'s set-up (hack/bootstrap.sh demo) on a copy of what it reads, then the README's
    commands: the demo venv once lacked prometheus_client, so `--help` failed after `make demo`."""
    copy = tmp_path / "repo"
    for name in ("hack", "controller"):
        shutil.copytree(
            os.path.join(ROOT, name),
            copy / name,
            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "config"),
        )
    for name in ("requirements.txt", "requirements-dev.txt"):
        shutil.copy(os.path.join(ROOT, name), copy / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHON"] = sys.executable
    setup = subprocess.run(
        ["bash", str(copy / "hack" / "bootstrap.sh"), "demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
        check=False,
    )
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    venv_bin = copy / ".venv" / "bin"
    for argv in (
        [str(venv_bin / "egress-proxies-controller")],
        [str(venv_bin / "python"), "-m", "egress_proxies_controller"],
    ):
        helped = subprocess.run(
            [*argv, "--help"], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
        )
        assert helped.returncode == 0, helped.stderr
        assert "--providers-file" in helped.stdout
    version = subprocess.run(
        [str(venv_bin / "egress-proxies-controller"), "--version"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert version.stdout.strip() == "egress-proxies-controller %s" % collection_version(), version.stderr
