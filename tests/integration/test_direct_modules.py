"""The collection's modules run from the installed collection on a local connection (issue 27).

plugins/plugin_utils/direct_module.py skips AnsiballZ's zip where the module's interpreter is
this one and the connection is local. These tests prove it is taken where it should be, that it
answers exactly as ansible-core's own path does (results, failures naming the field, check and
diff mode, a secret kept out of the output at -vvv), that the task's ``environment`` reaches the
module, and that anything else (another interpreter, the switch off) takes ansible-core's path.
"""

from __future__ import annotations

import os
import sys

from integration.playbook import run_playbook

SECRET = "direct-path-secret-5b1e"
LAUNCHED = "_loader.run_module"  # the direct path's command line, as -vvv prints it
PACKAGED = "Pipelining is enabled"  # ansible-core's path (the controller and make run pipelined)


def _providers(tmp_path) -> list:
    state = tmp_path / "state"
    return [
        {
            "name": "direct",
            "type": "local",
            "local": {"stateDir": str(state), "addressRange": "127.91.7.0/29"},
        }
    ]


def _tasks(tmp_path) -> list:
    providers = _providers(tmp_path)
    return [
        {
            "name": "info by id",
            "crawl.egress_proxies.proxy_info": {
                "providers": providers,
                "provider": "direct",
                "ids": ["local/proxy-aaaaaaaaaaaaaaaa"],
            },
        },
        {
            "name": "bad port",
            "crawl.egress_proxies.proxy_instance": {
                "providers": providers,
                "provider": "direct",
                "uid": "direct-1",
                "port": 99999,
            },
            "ignore_errors": True,
        },
        {
            "name": "create in check mode",
            "crawl.egress_proxies.proxy_instance": {
                "providers": providers,
                "provider": "direct",
                "uid": "direct-2",
                "auth": {"username": "crawler", "password": SECRET},
            },
            "check_mode": True,
            "diff": True,
        },
    ]


def _stable(result: dict) -> dict:
    """A task result without what differs from run to run (timings, telemetry)."""
    return {k: v for k, v in result.items() if k not in ("telemetry", "invocation")}


def _run(tmp_path, env=None):
    environ = {"ANSIBLE_PIPELINING": "true", **(env or {})}
    return run_playbook(tmp_path, _tasks(tmp_path), verbosity=3, env=environ)


def test_a_local_module_runs_from_the_collection_and_answers_as_ansiballz(tmp_path):
    direct = _run(tmp_path)
    packaged = _run(tmp_path, {"EGRESS_PROXIES_DIRECT_MODULES": "false"})
    assert LAUNCHED in direct.stdout and PACKAGED not in direct.stdout, direct.stdout[-3000:]
    assert PACKAGED in packaged.stdout and LAUNCHED not in packaged.stdout, packaged.stdout[-3000:]
    assert direct.rc == packaged.rc == 0, direct.stdout[-3000:]
    for name in ("info by id", "bad port", "create in check mode"):
        assert _stable(direct[name]) == _stable(packaged[name]), name
    assert direct["info by id"]["not_found"] == ["local/proxy-aaaaaaaaaaaaaaaa"]
    assert direct["bad port"]["failed"] and "port" in direct["bad port"]["msg"]
    assert direct["create in check mode"]["changed"] and direct["create in check mode"]["diff"]
    assert not os.path.exists(tmp_path / "state" / "instances") or not os.listdir(
        tmp_path / "state" / "instances"
    )
    for run in (direct, packaged):
        assert SECRET not in run.stdout and SECRET not in run.stderr


def test_the_tasks_environment_reaches_a_directly_run_module(tmp_path):
    providers_file = tmp_path / "providers.yml"
    providers_file.write_text(
        "providers:\n  - name: direct\n    type: local\n    local:\n"
        "      stateDir: %s\n      addressRange: 127.91.7.8/29\n" % (tmp_path / "state")
    )
    tasks = [
        {
            "name": "list",
            "crawl.egress_proxies.proxy_info": {"provider": "direct"},
            "environment": {"EGRESS_PROXIES_PROVIDERS_FILE": str(providers_file)},
        }
    ]
    run = run_playbook(tmp_path, tasks, verbosity=3, env={"ANSIBLE_PIPELINING": "true"})
    assert run.rc == 0 and run["list"]["instances"] == [], run.stdout[-3000:]
    assert LAUNCHED in run.stdout


def test_another_interpreter_takes_ansible_cores_path(tmp_path):
    other = tmp_path / "python"
    os.symlink(sys.executable, other)  # the same Python under another name: not "this" one
    tasks = [dict(_tasks(tmp_path)[0], vars={"ansible_python_interpreter": str(other)})]
    run = run_playbook(tmp_path, tasks, verbosity=3, env={"ANSIBLE_PIPELINING": "true"})
    assert run.rc == 0 and run["info by id"]["not_found"] == ["local/proxy-aaaaaaaaaaaaaaaa"]
    assert PACKAGED in run.stdout and LAUNCHED not in run.stdout, run.stdout[-3000:]
