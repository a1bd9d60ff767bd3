"""The "Egress proxies libvirt SSH" credential type (docs/awx/credential_types/) against the real
hypervisor (libvirtd over the real sshd of ``contract/libvirt_host.py``): its injection, rendered
as AWX renders it, beside the providers credential, is all a job needs. The providers file's kvm2
block names no key path; the modules find the injected key and known_hosts through the two
variables and ``proxy_check`` reaches the hypervisor, and the key never reaches the output, even
at -vvvv.
"""

from __future__ import annotations

import os
import stat

import pytest
import yaml
from contract import libvirt_fixtures
from contract.libvirt_backend import HOST_NAME, LibvirtContractBackend

from . import awx_injection
from .playbook import ROOT, run_playbook

pytestmark = [pytest.mark.libvirt, pytest.mark.playbook]

libvirt_host = libvirt_fixtures.libvirt_host
image_host = libvirt_fixtures.image_host
TYPES = os.path.join(ROOT, "docs", "awx", "credential_types")


def load(name: str) -> dict:
    with open(os.path.join(TYPES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_the_libvirt_ssh_injection_is_what_the_kvm_providers_read(tmp_path, libvirt_host, image_host):
    harness = LibvirtContractBackend(libvirt_host, image_host)
    try:
        block = harness.block()
        key_path, known_hosts_path = block.pop("sshKeyFile"), block.pop("knownHostsFile")
        with open(key_path, encoding="utf-8") as handle:
            key = handle.read()
        with open(known_hosts_path, encoding="utf-8") as handle:
            known_hosts = handle.read()
        providers = {
            "installation": harness.installation,
            "providers": [{"name": "hv", "type": "kvm2", "kvm2": block}],
        }
        job = str(tmp_path / "job")
        ssh_env, ssh_vars, ssh_files = awx_injection.inject(
            load("egress_proxies_libvirt_ssh.yml"), {"ssh_private_key": key, "known_hosts": known_hosts}, job
        )
        env, _vars, _files = awx_injection.inject(
            load("egress_proxies_providers.yml"), {"providers_yaml": yaml.safe_dump(providers)}, job
        )
        assert set(ssh_env) == {
            "EGRESS_PROXIES_LIBVIRT_SSH_KEY_FILE",
            "EGRESS_PROXIES_LIBVIRT_KNOWN_HOSTS_FILE",
        }
        assert ssh_vars == {}
        assert sorted(ssh_env.values()) == sorted(ssh_files)
        for path in ssh_files:
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        env.update(ssh_env)

        run = run_playbook(
            tmp_path,
            [{"name": "check", "crawl.egress_proxies.proxy_check": {}}],
            env=env,
            verbosity=4,
            json_output=False,
        )
        assert run.rc == 0, run.stdout[-3000:]
        assert '"target": "%s"' % HOST_NAME in run.stdout and '"reason": "Reachable"' in run.stdout
        assert '"ready": true' in run.stdout
        secret = [line for line in key.splitlines() if line and "PRIVATE KEY" not in line][1]
        assert secret not in run.stdout and secret not in run.stderr

        # Without the credential the same providers file names the missing field.
        bare = {k: v for k, v in env.items() if not k.startswith("EGRESS_PROXIES_LIBVIRT_")}
        run = run_playbook(tmp_path, [{"name": "check", "crawl.egress_proxies.proxy_check": {}}], env=bare)
        assert run.rc != 0
        assert "kvm2.sshKeyFile" in run["check"]["msg"] + " ".join(run["check"].get("problems", []))
    finally:
        harness.teardown()
