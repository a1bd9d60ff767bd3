"""What an AWX inventory update stores (issue 37): ``ansible-inventory --list --export`` on
ansible-core 2.19 gives the plugin's host variables as plain strings, ``ansible_host`` included,
while a backend value that looks like a template stays marked unsafe and is never rendered.

Real runs: a local proxy (real Squid) made through the modules, its record then given a field
holding a lookup (what a hostile backend could put there); ``ansible-inventory --export`` read
without any decoding hook, and an ad-hoc ``ansible`` run printing that field.
"""

from __future__ import annotations

import json

import pytest

from . import inventory_cli as cli
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
EVIL = "{{ lookup('pipe', 'id') }}"
LABEL = "proxy-operator-uid"  # the backend's own mark (core/names.py), read back as ``uid``


def test_export_gives_plain_strings_and_never_renders_a_backend_template(tmp_path, local):
    made = run_playbook(
        tmp_path,
        [{"name": "make", PI: {"provider": "local", "uid": "export-1", "wait": True, "wait_timeout": 60}}],
        module_defaults=local,
    )
    assert made.rc == 0, made.stdout[-3000:]
    instance = made["make"]["instance"]
    record = tmp_path / "state" / "instances" / instance["name"] / "instance.json"
    saved = record.read_text()
    doc = json.loads(saved)
    assert doc.get(LABEL) == "export-1", sorted(doc)
    record.write_text(json.dumps(dict(doc, **{LABEL: EVIL})))
    try:
        source = cli.write_source(tmp_path, providers_file=cli.write_providers(tmp_path, local))
        run = cli.run("ansible-inventory", "-i", source, "--list", "--export")
        assert run.rc == 0, run.stderr
        exported = json.loads(run.stdout[run.stdout.index("{") :])["_meta"]["hostvars"][instance["name"]]
        assert exported["ansible_host"] == instance["ip"], exported["ansible_host"]
        facts = exported["egress_proxies"]
        assert facts["name"] == instance["name"] and facts["provider"] == "local", facts
        assert facts["uid"] == {"__ansible_unsafe": EVIL}, facts["uid"]
        shown = cli.run(
            "ansible",
            "-i",
            source,
            instance["name"],
            "-c",
            "local",
            "-m",
            "ansible.builtin.debug",
            "-a",
            "msg={{ egress_proxies.uid }}",
        )
        assert shown.rc == 0, shown.stdout + shown.stderr
        assert EVIL in shown.stdout and "uid=" not in shown.stdout, shown.stdout
    finally:
        record.write_text(saved)  # so the fixture deletes it (and its Squid) by id
