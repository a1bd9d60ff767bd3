"""docs/awx.md's playbooks, taken from the Markdown and run by a real ansible-playbook.

Issue 37: the credential-types import playbook of section 3 failed as written (``No filter named
'ansible.builtin.file'``: ``file`` is a lookup). Only the ``awx.awx`` modules are stand-ins
(tests/docs/awx_stand_in.py); every expression of the playbook runs for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from contract.local_backend import random_loopback_range
from integration.local_env import instance_dirs, kill_squids
from integration.playbook import COLLECTIONS, ansible_environ, run_playbook

from . import awx_stand_in
from .markdown_blocks import ROOT, blocks

pytestmark = pytest.mark.playbook
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def _playbook(module: str) -> str:
    found = [b for b in blocks("docs/awx.md") if "awx.awx.%s" % module in b.text]
    assert len(found) == 1, "docs/awx.md should show one playbook with awx.awx.%s" % module
    return found[0].text


def _run(tmp_path, module: str, *extra: str) -> list:
    """Run docs/awx.md's playbook using ``module``; returns the loop's results."""
    playbook = tmp_path / ("%s.yml" % module)
    playbook.write_text(_playbook(module))
    stand_in = awx_stand_in.install(tmp_path / "collections")
    environ = ansible_environ(
        ANSIBLE_COLLECTIONS_PATH="%s:%s" % (stand_in, COLLECTIONS),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_LOCALHOST_WARNING="false",
    )
    argv = [ANSIBLE_PLAYBOOK, str(playbook), *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    output = json.loads(proc.stdout[proc.stdout.index("{") :])
    return output["plays"][0]["tasks"][0]["hosts"]["localhost"]["results"]


def test_the_credential_types_import_playbook_runs_as_written(tmp_path):
    # The playbook's collection_dir is where ansible-galaxy installs the collection; here the
    # collection is this checkout (extra vars override the task's vars).
    results = _run(tmp_path, "credential_type", "-e", "collection_dir=%s" % ROOT)
    sent = {r["arguments"]["name"]: r["arguments"] for r in results}
    directory = os.path.join(ROOT, "docs", "awx", "credential_types")
    expected = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
        expected[document["name"]] = document
    assert sorted(sent) == sorted(expected)
    for name, document in expected.items():
        for key in ("description", "kind", "inputs", "injectors"):
            assert sent[name][key] == document[key], (name, key)


def test_the_job_templates_playbook_runs_as_written(tmp_path):
    """One job template per ready playbook, each naming a playbook that exists."""
    results = _run(tmp_path, "job_template")
    playbooks = [r["arguments"]["playbook"] for r in results]
    assert len(results) == 6 and all(
        r["arguments"]["credentials"][0] == "egress-proxies providers" for r in results
    )
    for path in playbooks:
        assert os.path.isfile(os.path.join(ROOT, path)), path


@pytest.mark.squid
def test_the_survey_playbook_runs_under_ansible_runner_as_awx_lays_it_out(tmp_path):
    """The ad-hoc survey playbook of section 4, run by ansible-runner from a private data directory
    laid out as AWX lays it (project/, inventory/, env/extravars with the survey's answers,
    env/envvars with what the providers credential injects), with the local provider and Squid."""
    import ansible_runner

    (block,) = [b for b in blocks("docs/awx.md") if "One proxy per line of the survey" in b.text]
    state_dir = tmp_path / "state"
    providers_file = tmp_path / "providers.yaml"
    local = {"stateDir": str(state_dir), "addressRange": random_loopback_range()}
    providers_file.write_text(
        yaml.safe_dump({"providers": [{"name": "local", "type": "local", "local": local}]})
    )
    private = tmp_path / "private"
    for sub in ("project", "inventory", "env"):
        (private / sub).mkdir(parents=True)
    (private / "project" / "survey.yml").write_text(block.text)
    # AWX's implicit localhost runs the execution environment's Python: here, this venv's
    (private / "inventory" / "hosts").write_text(
        "localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable
    )
    answers = {"survey_uids": "team-a-1\n  team-a-2  \n\n", "egress_proxies_provider": "local"}
    (private / "env" / "extravars").write_text(yaml.safe_dump(answers))
    environ = ansible_environ(EGRESS_PROXIES_PROVIDERS_FILE=str(providers_file))
    keys = ("EGRESS_PROXIES_PROVIDERS_FILE", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH")
    (private / "env" / "envvars").write_text(yaml.safe_dump({k: environ[k] for k in keys}))
    try:
        run = ansible_runner.run(
            private_data_dir=str(private),
            playbook="survey.yml",
            quiet=True,
            envvars={"PATH": environ["PATH"]},
        )
        assert run.status == "successful", "".join(run.stdout.readlines())[-3000:]
        assert len(instance_dirs(state_dir)) == 2
    finally:
        leftovers = instance_dirs(state_dir)
        if leftovers:
            items = [{"id": "local/%s" % name} for name in leftovers]
            run_playbook(
                tmp_path,
                [
                    {
                        "crawl.egress_proxies.proxy_instance": {
                            "provider": "local",
                            "state": "absent",
                            "instances": items,
                        }
                    }
                ],
                module_defaults={"providers_file": str(providers_file)},
            )
    assert instance_dirs(state_dir) == [] and kill_squids(state_dir) == []
