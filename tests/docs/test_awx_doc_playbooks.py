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
from integration.playbook import COLLECTIONS, ansible_environ

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
