"""docs/awx.md section 5, "The proxies as an inventory", run as AWX runs an inventory update:
the source file and the credential type taken from the Markdown at test time.

The credential type's injectors are rendered as AWX renders them (tests/docs/awx_injection.py:
files of the private data directory, 0600, named by ``tower.filename``; ``env``) with a
providers file holding a local provider (scratch ``stateDir``, free loopback range) and a
service-account key; the source's variables of the section's table become environment
variables; then ansible-runner runs ``ansible-inventory --list --export`` in a private data
directory laid out as AWX lays it (``project/`` with the source file, ``env/envvars``). One real
proxy (local provider, real Squid) exists while it runs: the update lists it, as plain values
(what AWX stores), and no secret reaches the output.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import uuid

import pytest
import yaml
from contract.local_backend import random_loopback_range
from integration.local_env import instance_dirs, kill_squids
from integration.playbook import ansible_environ, run_playbook

from . import awx_injection
from .markdown_blocks import blocks

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PAGE = "docs/awx.md"
PI = "crawl.egress_proxies.proxy_instance"


def one_block(needle: str):
    found = [b for b in blocks(PAGE) if needle in b.text]
    assert len(found) == 1, "%s: %d blocks contain %r" % (PAGE, len(found), needle)
    return found[0]


def source_variables() -> dict:
    """The "Source variables" row of the section's table (YAML in backquotes)."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", PAGE), encoding="utf-8") as handle:
        (row,) = [line for line in handle if line.startswith("| Source variables |")]
    return yaml.safe_load(row.split("`")[1])


def test_the_inventory_source_lists_the_proxies_with_the_documented_credential(tmp_path):
    import ansible_runner

    credential = yaml.safe_load(one_block("# Injector configuration").text)
    inputs = {k: credential[k] for k in ("fields", "required")}
    injectors = {k: credential[k] for k in ("file", "env", "extra_vars")}
    assert awx_injection.validate_inputs(inputs) == []

    state_dir = tmp_path / "state"
    local = {"stateDir": str(state_dir), "addressRange": random_loopback_range()}
    providers = {
        "installation": "awx-%s" % uuid.uuid4().hex[:8],
        "providers": [{"name": "local", "type": "local", "local": local}],
    }
    key = json.dumps({"type": "service_account", "private_key": "KEY-%s" % uuid.uuid4().hex})
    private = tmp_path / "private"
    (private / "project" / "inventory").mkdir(parents=True)
    (private / "env").mkdir()
    injected = awx_injection.inject(
        inputs, injectors, {"providers_yaml": yaml.safe_dump(providers), "gcp_key": key}, str(private / "env")
    )
    for path in injected.files.values():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(injected.env["GOOGLE_APPLICATION_CREDENTIALS"], encoding="utf-8") as handle:
        assert handle.read() == key
    providers_file = injected.env["EGRESS_PROXIES_PROVIDERS_FILE"]
    assert injected.extra_vars == {"egress_proxies_providers_file": providers_file}

    source = one_block("plugin: crawl.egress_proxies.proxies\nstrict: true")
    path = source.text.splitlines()[0].lstrip("# ").strip()  # inventory/egress.proxies.yml
    (private / "project" / path).write_text(source.text)
    environ = ansible_environ()
    keys = ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH")
    envvars = dict({k: environ[k] for k in keys}, **injected.env, **source_variables())
    (private / "env" / "envvars").write_text(yaml.safe_dump(envvars))

    uid = "awx-%s" % uuid.uuid4().hex[:8]
    made = run_playbook(
        tmp_path,
        [{"name": "create", PI: {"uid": uid, "provider": "local", "wait": True}}],
        module_defaults={"providers_file": providers_file},
    )
    try:
        assert made.rc == 0, made.stdout[-3000:]
        instance = made["create"]["instance"]
        output = tmp_path / "inventory.json"
        update = ansible_runner.run_command(
            executable_cmd=os.path.join(os.path.dirname(sys.executable), "ansible-inventory"),
            cmdline_args=["-i", os.path.join("project", path), "--list", "--export", "--output", str(output)],
            private_data_dir=str(private),
            host_cwd=str(private),
            envvars={"PATH": environ["PATH"]},
            quiet=True,
        )
        out, err, rc = update
        assert rc == 0, (out + err)[-3000:]
        listed = json.loads(output.read_text())
    finally:
        gone = run_playbook(
            tmp_path,
            [{"name": "delete", PI: {"uid": uid, "provider": "local", "state": "absent"}}],
            module_defaults={"providers_file": providers_file},
        )
        assert gone.rc == 0, gone.stdout[-3000:]
        assert instance_dirs(state_dir) == [] and kill_squids(state_dir) == []
    host = listed["_meta"]["hostvars"][instance["name"]]
    assert host["ansible_host"] == instance["ip"]  # a plain value, not {"__ansible_unsafe": ...}
    assert host["egress_proxies"]["uid"] == uid and host["egress_proxies"]["provider"] == "local"
    assert instance["name"] in listed["state_running"]["hosts"]
    assert key not in output.read_text() and key not in out + err
