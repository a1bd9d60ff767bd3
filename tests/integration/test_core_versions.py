"""The collection on the ansible-core it runs under (issue 39): every module answers, and answers
the same on the direct start (plugins/plugin_utils/direct_module.py, where this ansible-core has
the internals it needs) as on ansible-core's ordinary path; the inventory plugin never evaluates
a value a backend returned as a template.

These run on the tree's ansible-core (.venv) in the normal suite; the version matrix runs the
same file once per supported minor with ``EGRESS_PROXIES_MATRIX_VENV`` naming that minor's
virtualenv (integration/playbook.py): 2.19 and 2.20 take the direct start, 2.16 to 2.18 and 2.21
lack an internal it needs and take the ordinary path either way.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from contract.local_backend import random_loopback_range

from . import inventory_cli as cli
from .playbook import BIN, run_playbook

pytestmark = [pytest.mark.playbook]

SECRET = "core-versions-secret-71c3"
HOSTILE = "{{ lookup('pipe', 'id') }}"  # what a backend could name an instance or label
RAN = "uid="  # what ``id`` prints: the lookup ran
LAUNCHED = "_loader.run_module"  # the direct start's command line, as -vvv prints it
DIRECT_MINORS = ("2.19", "2.20")  # the minors with every internal the direct start needs


def _core_minor() -> str:
    """The ansible-core minor the playbooks run on (``2.16``)."""
    program = "import ansible.release as r;print('.'.join(r.__version__.split('.')[:2]))"
    python = os.path.join(BIN, "python")
    return subprocess.run([python, "-c", program], capture_output=True, text=True, check=True).stdout.strip()


def _module_tasks(tmp_path) -> list:
    providers = [
        {
            "name": "direct",
            "type": "local",
            "local": {"stateDir": str(tmp_path / "state"), "addressRange": random_loopback_range()},
        }
    ]
    common = {"providers": providers, "provider": "direct"}
    return [
        {
            "name": "info",
            "crawl.egress_proxies.proxy_info": {**common, "ids": ["local/proxy-aaaaaaaaaaaaaaaa"]},
        },
        {
            "name": "bad port",
            "crawl.egress_proxies.proxy_instance": {**common, "uid": "v-1", "port": 99999},
            "ignore_errors": True,
        },
        {
            "name": "create in check mode",
            "crawl.egress_proxies.proxy_instance": {
                **common,
                "uid": "v-2",
                "auth": {"username": "crawler", "password": SECRET},
            },
            "check_mode": True,
            "diff": True,
        },
        {
            "name": "pool in check mode",
            "crawl.egress_proxies.proxy_pool": {**common, "pool": "v", "count": 2},
            "check_mode": True,
        },
        {
            "name": "gc in check mode",
            "crawl.egress_proxies.proxy_gc": {**common, "live_uids": []},
            "check_mode": True,
        },
        {"name": "check", "crawl.egress_proxies.proxy_check": common},
    ]


def _stable(result: dict) -> dict:
    """A task result without what differs from run to run (timings, telemetry, temp paths in a trace)."""
    return {k: v for k, v in result.items() if k not in ("telemetry", "invocation", "exception")}


def test_every_module_answers_alike_on_either_path(tmp_path):
    tasks = _module_tasks(tmp_path)
    runs = [
        run_playbook(tmp_path, tasks, verbosity=3, env={"ANSIBLE_PIPELINING": "true", **env})
        for env in ({}, {"EGRESS_PROXIES_DIRECT_MODULES": "false"})
    ]
    chosen, ordinary = runs
    for run in runs:
        assert run.rc == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "Unexpected Exception" not in run.stderr
        assert SECRET not in run.stdout and SECRET not in run.stderr
    assert LAUNCHED not in ordinary.stdout
    assert (LAUNCHED in chosen.stdout) == (_core_minor() in DIRECT_MINORS), _core_minor()
    for name in ("info", "bad port", "create in check mode", "pool in check mode", "gc in check mode"):
        assert _stable(chosen[name]) == _stable(ordinary[name]), name
    for run in runs:  # a health check's own timings differ from run to run
        assert [(p["name"], p["ready"]) for p in run["check"]["providers"]] == [("direct", True)]
    assert chosen["info"]["not_found"] == ["local/proxy-aaaaaaaaaaaaaaaa"]
    bad = chosen["bad port"]
    assert bad["failed"] and "port" in bad["msg"] and bad["error_class"] == "permanent", bad
    created = chosen["create in check mode"]
    assert created["changed"] and created["diff"], created
    assert chosen["pool in check mode"]["changed"], chosen["pool in check mode"]
    assert not chosen["gc in check mode"]["changed"], chosen["gc in check mode"]
    assert not os.path.exists(tmp_path / "state" / "instances") or not os.listdir(
        tmp_path / "state" / "instances"
    )


def _cached_source(tmp_path) -> str:
    """An inventory source whose cache holds one instance named and labelled by ``HOSTILE``, as a
    backend could answer: the plugin reads it back from the cache like any listing."""
    providers = cli.write_local_provider(tmp_path, random_loopback_range())
    cache_dir = tmp_path / "cache"
    source = cli.write_source(
        tmp_path,
        providers_file=providers,
        hostnames=["name"],
        cache=True,
        cache_plugin="ansible.builtin.jsonfile",
        cache_connection=str(cache_dir),
        cache_timeout=3600,
        compose={"proxy_label": "egress_proxies.installation"},
        keyed_groups=[{"key": "egress_proxies.installation", "prefix": "inst"}],
        groups={"hostile": "egress_proxies.name is search('lookup')"},
    )
    first = cli.inventory(source, "--list")
    assert first.rc == 0, first.stderr[-2000:]
    (cached,) = os.listdir(cache_dir)
    record = {
        "id": "local/proxy-bbbbbbbbbbbbbbbb",
        "name": HOSTILE,
        "uid": "u-1",
        "provider": "loc",
        "type": "local",
        "state": "Running",
        "ip": "127.0.0.1",
        "port": 3128,
        "zone": "",
        "created_at": "2026-12-06T00:00:00Z",
        "installation": HOSTILE,
    }
    listing = {"hosts": [record], "errors": [], "warnings": []}
    with open(cache_dir / cached, encoding="utf-8") as handle:
        stored = json.load(handle)
    if isinstance(stored, dict) and "__payload__" in stored:  # 2.19's jsonfile envelope; plain before
        stored["__payload__"], listing = json.dumps(listing), stored
    with open(cache_dir / cached, "w", encoding="utf-8") as handle:
        json.dump(listing, handle)
    return source


def test_a_backend_value_is_never_evaluated_as_a_template(tmp_path):
    source = _cached_source(tmp_path)
    listed = cli.inventory(source, "--list")
    assert listed.rc == 0, listed.stderr[-2000:]
    assert list(listed.hostvars) == [HOSTILE], listed.stdout[-2000:]
    hostvars = listed.hostvars[HOSTILE]
    assert hostvars["egress_proxies"]["name"] == HOSTILE and hostvars["proxy_label"] == HOSTILE
    assert listed.hosts_of("hostile") == [HOSTILE]
    graph = cli.inventory(source, "--graph")
    assert graph.rc == 0 and HOSTILE in graph.stdout and RAN not in graph.stdout, graph.stdout
    play = tmp_path / "show.yml"
    play.write_text(
        "- hosts: hostile\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.debug:\n"
        '        msg: "[{{ inventory_hostname }}|{{ egress_proxies.name }}|{{ proxy_label }}]"\n'
    )
    shown = cli.run("ansible-playbook", "-i", source, str(play), env={"ANSIBLE_CONNECTION": "local"})
    assert shown.rc == 0, shown.stdout[-3000:] + shown.stderr[-2000:]
    assert "[%s|%s|%s]" % (HOSTILE, HOSTILE, HOSTILE) in shown.stdout, shown.stdout[-3000:]
    assert RAN not in shown.stdout + shown.stderr


def test_gc_names_the_providers_it_skipped_without_the_task_looking_skipped(tmp_path):
    """``skipped`` is a result key every ansible-core reads as the task's own state (2.21 turns a
    list there into a bool); the providers a sweep skipped come back as ``skipped_providers``."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"  # nothing listens there
        "users: [{name: u, user: {token: t0k}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]\n"
    )
    kubeconfig.chmod(0o600)
    broken = {"name": "broken", "type": "kubernetes", "kubernetes": {"kubeconfig": str(kubeconfig)}}
    tasks = [
        {
            "name": "sweep",
            "crawl.egress_proxies.proxy_gc": {"providers": [broken], "live_uids": [], "timeout": 30},
            "register": "swept",
        },
        {"name": "after", "ansible.builtin.debug": {"msg": "{{ swept is skipped }}"}},
    ]
    run = run_playbook(tmp_path, tasks)
    assert run.rc == 0, run.stdout[-3000:] + run.stderr[-2000:]
    swept = run["sweep"]
    assert swept["skipped_providers"] == ["broken"] and not swept.get("skipped"), swept
    assert [e["provider"] for e in swept["errors"]] == ["broken"]
    assert run["after"]["msg"] is False or run["after"]["msg"] == "False", run["after"]
    assert "converted to bool" not in run.stdout + run.stderr
