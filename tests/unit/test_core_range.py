"""The supported ansible-core range (issue 39): one message from the collection itself, naming the
range and the version found, from the action plugins, the inventory plugin and the modules; the
range matches meta/runtime.yml; the direct start is chosen by feature detection, and without the
internals it needs a task takes ansible-core's ordinary path."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from ansible.errors import AnsibleParserError
from ansible.plugins.action.normal import ActionModule as NormalAction

from ansible_collections.crawl.egress_proxies.plugins.inventory import proxies
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import core_range
from ansible_collections.crawl.egress_proxies.plugins.plugin_utils import direct_module, template_trust

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OLD = "2.15.13"
MESSAGE = "crawl.egress_proxies supports ansible-core 2.16 or later; this is ansible-core 2.15.13"


@pytest.mark.parametrize("version", ["2.16.0", "2.16.19", "2.19.14", "2.21.5", "2.22.0rc1", "3.0.0"])
def test_a_supported_version_has_no_problem(version):
    assert core_range.problem(version) is None


@pytest.mark.parametrize("version", ["2.15.13", "2.9.27", "1.0", "devel", ""])
def test_any_other_version_gets_one_message_naming_range_and_version(version):
    assert core_range.problem(version) == (
        "crawl.egress_proxies supports ansible-core 2.16 or later; this is ansible-core %s" % version
    )


def test_the_range_is_what_meta_runtime_declares():
    with open(os.path.join(ROOT, "meta", "runtime.yml"), encoding="utf-8") as handle:
        declared = yaml.safe_load(handle)["requires_ansible"]
    assert declared == ">=%d.%d.0" % core_range.MINIMUM


def test_an_action_refuses_an_unsupported_core_before_anything_else(monkeypatch):
    monkeypatch.setattr(direct_module, "ansible_core_version", OLD)
    action = object.__new__(direct_module.DirectModuleAction)  # nothing of a task is reached
    assert action.run(task_vars={}) == {"failed": True, "msg": MESSAGE}


def test_the_inventory_plugin_refuses_an_unsupported_core(monkeypatch):
    monkeypatch.setattr(proxies, "ansible_core_version", OLD)
    with pytest.raises(AnsibleParserError, match=re.escape(MESSAGE)):
        proxies.InventoryModule().parse(None, None, "x.proxies.yml")


def test_a_module_refuses_an_unsupported_core(tmp_path):
    """A real module process, its arguments in a file as the module interface documents."""
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"providers": []}}))
    program = (
        "import ansible.module_utils.ansible_release as r;r.__version__=%r;import runpy;"
        "runpy.run_module('ansible_collections.crawl.egress_proxies.plugins.modules.proxy_info',"
        "run_name='__main__')" % OLD
    )
    collections = os.path.join(ROOT, ".venv", "collections")
    done = subprocess.run(
        [sys.executable, "-c", program, str(args)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=collections),
        timeout=120,
        check=False,
    )
    answer = json.loads(done.stdout)
    assert done.returncode == 1 and answer["failed"], done.stdout + done.stderr
    assert answer["msg"] == MESSAGE and answer["error_class"] == "permanent"


def test_the_fast_path_is_found_on_this_core_only_with_all_its_internals(monkeypatch):
    direct_module.fast_path.cache_clear()
    try:
        assert direct_module.fast_path() is not None  # the tree's ansible-core (2.19) has them
        for name in ("Direction", "get_module_encoder", "remove_internal_keys"):
            with monkeypatch.context() as patch:
                patch.setattr(direct_module, name, None)
                direct_module.fast_path.cache_clear()
                assert direct_module.fast_path() is None, name
        monkeypatch.setattr(direct_module, "LOADER", "ansible.module_utils._internal._no_such_loader")
        direct_module.fast_path.cache_clear()
        assert direct_module.fast_path() is None
    finally:
        monkeypatch.undo()
        direct_module.fast_path.cache_clear()


def test_without_the_fast_path_a_task_takes_ansible_cores_path(monkeypatch):
    """What 2.16-2.18 and 2.21 do: ansible-core's ``_execute_module`` with every argument as
    given (tests/integration/test_core_versions.py proves the answers are the same)."""
    calls = []
    monkeypatch.setattr(
        NormalAction, "_execute_module", lambda self, *a, **k: calls.append((a, k)) or {"ok": 1}
    )
    monkeypatch.setattr(direct_module, "fast_path", lambda: None)
    action = object.__new__(direct_module.DirectModuleAction)
    action._direct_interpreter = lambda *a: pytest.fail("the direct start was considered")
    assert action._execute_module("m", {"a": 1}, task_vars={}, ignore_unknown_opts=True) == {"ok": 1}
    assert calls == [(("m", {"a": 1}, None, {}, False, None, False), {"ignore_unknown_opts": True})]


def test_a_backend_value_stays_literal_and_the_plugins_own_template_renders():
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    hostile = "{{ lookup('pipe', 'id') }}"
    templar = Templar(loader=DataLoader())
    value = {"name": hostile, "labels": [hostile]}
    templar.available_variables = {"v": template_trust.literal(value, templar.is_possibly_template)}
    assert (
        templar.template(template_trust.template("{{ v.name }}|{{ v.labels[0] }}")) == hostile + "|" + hostile
    )
