"""The molecule scenarios of extensions/molecule/, each run with ``molecule test -s <name>``.

- ``libvirt_host`` and ``proxy``: the surroundings of a hypervisor on this machine come from
  ``hypervisor_env.py`` (libvirt test lock, sshd, image server, private libvirtd.conf); the
  libvirt_host role converges it (starting libvirtd and virtlogd itself, no systemd here) and
  must pass molecule's idempotence step; then the proxy role brings two real guests (the test
  image of tests/guest) to Running over SSH, verified with proxy_info and by a fetch through
  each from the test network namespace, shows its failure table for a guest without an
  address, and deletes them.
- ``controller``: the controller role deployed to the test API server (``kube_cluster``).

A scenario fails the test with molecule's output; the surroundings are always torn down.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest
from contract import system_libvirtd as system_libvirtd_fixtures

from . import hypervisor_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)

pytestmark = [pytest.mark.playbook]

# The machine's own libvirtd runs beside the scenarios' (started here when the machine has
# none): the role's daemons, in their private namespace, must not meet it.
system_libvirtd = system_libvirtd_fixtures.system_libvirtd


def molecule(scenario: str, env: dict) -> None:
    environ = dict(
        os.environ,
        PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".venv", "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_NOCOLOR="1",
        NO_COLOR="1",
        **env,
    )
    proc = subprocess.run(
        [os.path.join(BIN, "molecule"), "test", "-s", scenario],
        cwd=os.path.join(ROOT, "extensions"),
        capture_output=True,
        text=True,
        env=environ,
        timeout=1200,
        check=False,
    )
    output = proc.stdout + proc.stderr
    lines = output.splitlines()
    failures = [
        "\n".join(lines[max(0, i - 5) : i + 3])
        for i, line in enumerate(lines)
        if line.lstrip().startswith("fatal:")
    ]
    assert proc.returncode == 0, "molecule test -s %s failed:\n%s\n...\n%s" % (
        scenario,
        "\n---\n".join(failures)[:8000],
        output[-3000:],
    )
    # Every step of the scenario's sequence ran and passed (none was skipped or missing).
    assert "failed=1" not in output and "Executed: Failed" not in output, output[-6000:]


def test_libvirt_host_then_proxy_scenarios(system_libvirtd):
    # Not under pytest's tmp_path: its parents are 0700, and qemu (another uid) must reach the pool.
    directory = tempfile.mkdtemp(prefix="egress-molecule-", dir="/tmp")
    try:
        env = hypervisor_env.up(directory, in_process=True)
        molecule("libvirt_host", env)
        molecule("proxy", env)
    finally:
        hypervisor_env.down(directory)
    assert not os.path.exists(directory)
    assert system_libvirtd.alive(), "the scenarios must leave the machine's own libvirtd serving"


def test_controller_scenario(kube_cluster, tmp_path):
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    (tmp_path / "known_hosts").write_text("[192.0.2.10]:22 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample\n")
    molecule(
        "controller",
        {"MOLECULE_KUBE_DIR": kube_cluster.dir, "MOLECULE_CONTROLLER_DIR": str(tmp_path)},
    )
