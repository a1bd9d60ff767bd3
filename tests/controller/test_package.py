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


def copy_source(name: str, dest) -> None:
    """A copy of the repository's ``name``: building writes egg-info next to the sources."""
    shutil.copytree(
        os.path.join(ROOT, name),
        dest,
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "config"),
    )


def run(argv: list, cwd=None, timeout: float = 900) -> subprocess.CompletedProcess:
    """``argv`` without this test process's PYTHONPATH or virtualenv, so nothing of it leaks in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHON"] = sys.executable
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout, check=False
    )


def assert_the_commands_work(venv_bin, cwd) -> None:
    """The console script and ``python -m``: ``--version`` is the collection's, ``--help`` every flag."""
    expected = "egress-proxies-controller %s" % collection_version()
    for argv in (
        [str(venv_bin / "egress-proxies-controller")],
        [str(venv_bin / "python"), "-m", "egress_proxies_controller"],
    ):
        version = run([*argv, "--version"], cwd=cwd)
        assert (version.returncode, version.stdout.strip()) == (0, expected), version.stderr
        helped = run([*argv, "--help"], cwd=cwd)
        assert helped.returncode == 0, helped.stderr
        assert "--providers-file" in helped.stdout and "--leader-elect" in helped.stdout


def test_one_version_for_the_collection_and_the_controller_package():
    with open(os.path.join(ROOT, "controller", "pyproject.toml"), "rb") as handle:
        project = tomllib.load(handle)["project"]
    assert project["version"] == collection_version()
    assert project["scripts"] == {"egress-proxies-controller": "egress_proxies_controller.__main__:main"}


def test_pip_install_in_a_fresh_venv_gives_the_console_script_and_the_version(tmp_path):
    copy_source("controller", tmp_path / "controller")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    install = run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "-q",
            "--disable-pip-version-check",
            str(tmp_path / "controller"),
        ]
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"  # neither the repository nor the copy is on sys.path
    elsewhere.mkdir()
    assert_the_commands_work(venv / "bin", elsewhere)
    where = run(
        [str(venv / "bin" / "python"), "-c", "import egress_proxies_controller as c; print(c.__file__)"],
        cwd=elsewhere,
    )
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr  # the installed copy


def test_the_readme_controller_commands_work_after_the_demo_set_up(tmp_path):
    """`make demo`'s set-up (hack/bootstrap.sh demo) on a copy of what it reads, then the README's
    commands: the demo venv once lacked prometheus_client, so `--help` failed after `make demo`."""
    repo = tmp_path / "repo"
    for name in ("hack", "controller"):
        copy_source(name, repo / name)
    for name in ("requirements.txt", "requirements-dev.txt"):
        shutil.copy(os.path.join(ROOT, name), repo / name)
    setup = run(["bash", str(repo / "hack" / "bootstrap.sh"), "demo"], timeout=1800)
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    assert_the_commands_work(repo / ".venv" / "bin", tmp_path)
