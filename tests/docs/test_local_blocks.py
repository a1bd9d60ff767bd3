"""Blocks of README.md and docs/ that the local provider lets run for real, taken from the
Markdown at test time: README's controller commands, docs/configuration.md's inline-providers
task (a real Squid made, its record compared with docs/local-provider.md's ``instance.json``,
then removed), docs/local-provider.md's providers file read through
docs/modules.md's ``module_defaults`` by a ``proxy_info`` run, and docs/configuration.md's example
file, whose two providers ``proxy_check`` finds ready.

Only what cannot be used as written is rewritten: a providers file's path, ``stateDir`` and
``addressRange`` become a scratch file, directory and free loopback range.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml
from contract.local_backend import random_loopback_range
from integration.local_env import instance_dirs, kill_squids
from integration.playbook import run_playbook

from .markdown_blocks import ROOT, blocks

pytestmark = [pytest.mark.squid, pytest.mark.playbook]


def _one(path: str, needle: str):
    found = [b for b in blocks(path) if needle in b.text]
    assert len(found) == 1, "%s: %d blocks contain %r" % (path, len(found), needle)
    return found[0]


def _scratch(local: dict, state_dir) -> dict:
    """A local block with a scratch ``stateDir`` and a free loopback ``addressRange``."""
    return dict(local, stateDir=str(state_dir), addressRange=random_loopback_range())


def test_readme_controller_commands_run_as_written():
    block = _one("README.md", "egress-proxies-controller --version")
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    for line in block.text.splitlines():
        command, comment = line.partition("#")[::2]
        proc = subprocess.run(
            command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
        )
        assert proc.returncode == 0, "%s: %s" % (command, proc.stderr)
        if "--version" in command:
            said = comment.split(":")[0].strip()  # "egress-proxies-controller 0.2.0"
            assert proc.stdout.strip() == said == "egress-proxies-controller %s" % version, proc.stdout
        else:
            assert "--providers-file" in proc.stdout  # every flag


def test_configuration_inline_providers_task_makes_the_documented_record_and_removes_it(tmp_path):
    """docs/configuration.md's task makes a real proxy whose ``instance.json`` has exactly the
    keys docs/local-provider.md shows, with values of the same kinds; then it is removed."""
    task = yaml.safe_load(_one("docs/configuration.md", "uid: 2f1c0d4e-demo").text)[0]
    shown = json.loads(_one("docs/local-provider.md", '"proxy-operator-managed": "true"').text)
    args = task["crawl.egress_proxies.proxy_instance"]
    state_dir = tmp_path / "state"
    args["providers"][0]["local"] = _scratch(args["providers"][0]["local"], state_dir)
    try:
        run = run_playbook(tmp_path, [dict(task, name="create")])
        assert run.rc == 0, run.stdout[-3000:]
        instance = run["create"]["instance"]
        assert run["create"]["changed"] and instance["uid"] == "2f1c0d4e-demo"
        with open(state_dir / "instances" / instance["name"] / "instance.json", encoding="utf-8") as handle:
            record = json.load(handle)
        assert sorted(record) == sorted(shown), (sorted(record), sorted(shown))
        assert {k: type(v) for k, v in record.items()} == {k: type(v) for k, v in shown.items()}
        assert record["proxy-operator-uid"] == "2f1c0d4e-demo" and record["name"] == instance["name"]
        absent = dict(args, state="absent")
        done = run_playbook(tmp_path, [{"name": "delete", "crawl.egress_proxies.proxy_instance": absent}])
        assert done.rc == 0 and done["delete"]["changed"], done.stdout[-3000:]
        assert instance_dirs(state_dir) == []
    finally:
        kill_squids(state_dir)


def test_local_provider_file_through_the_module_defaults_of_modules_md(tmp_path):
    providers = yaml.safe_load(_one("docs/local-provider.md", "squidBinary: squid").text)
    providers["providers"][0]["local"] = _scratch(providers["providers"][0]["local"], tmp_path / "state")
    providers_file = tmp_path / "providers.yaml"
    providers_file.write_text(yaml.safe_dump(providers))
    defaults = yaml.safe_load(_one("docs/modules.md", "group/crawl.egress_proxies.egress_proxies:").text)
    group = defaults["module_defaults"]["group/crawl.egress_proxies.egress_proxies"]
    run = run_playbook(
        tmp_path,
        [{"name": "info", "crawl.egress_proxies.proxy_info": {}}],
        module_defaults=dict(group, providers_file=str(providers_file)),
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert run["info"]["instances"] == [] and not run["info"].get("errors"), run["info"]


def test_configuration_example_file_checks_both_providers(tmp_path):
    """docs/configuration.md's example file: two providers of one type, each checked ready by
    ``proxy_check`` (its Squid binary and its own state directory), and nothing listed for the
    installation it names."""
    providers = yaml.safe_load(_one("docs/configuration.md", "name: local-lab").text)
    for index, entry in enumerate(providers["providers"]):
        entry["local"] = _scratch(entry["local"], tmp_path / ("state-%d" % index))
    providers_file = tmp_path / "providers.yaml"
    providers_file.write_text(yaml.safe_dump(providers))
    run = run_playbook(
        tmp_path,
        [
            {"name": "check", "crawl.egress_proxies.proxy_check": {}},
            {"name": "info", "crawl.egress_proxies.proxy_info": {}},
        ],
        module_defaults={"providers_file": str(providers_file)},
    )
    assert run.rc == 0, run.stdout[-3000:]
    checked = {p["name"]: p["ready"] for p in run["check"]["providers"]}
    assert checked == {"local": True, "local-lab": True}, run["check"]
    assert run["info"]["instances"] == [] and not run["info"].get("errors"), run["info"]
