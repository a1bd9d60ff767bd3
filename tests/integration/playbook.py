"""Run real ``ansible-playbook`` processes from tests and read their task results.

Every module test goes through this: a playbook is written to a temp dir, run by the venv's
``ansible-playbook`` against implicit localhost (so modules run with the venv's Python, as in
``make demo``), with the JSON stdout callback so each task's result can be asserted on. The
raw output is kept too, for checks that nothing secret was printed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The version matrix runs these playbooks on another ansible-core: a virtualenv of its own with
# ``bin/ansible-playbook`` and ``collections/`` (this tree linked as crawl/egress_proxies).
MATRIX_VENV = os.environ.get("EGRESS_PROXIES_MATRIX_VENV", "")
COLLECTIONS = (
    os.path.join(MATRIX_VENV, "collections") if MATRIX_VENV else os.path.join(ROOT, ".venv", "collections")
)
BIN = os.path.join(MATRIX_VENV, "bin") if MATRIX_VENV else os.path.dirname(sys.executable)
ANSIBLE_PLAYBOOK = os.path.join(BIN, "ansible-playbook")


@dataclasses.dataclass
class PlaybookRun:
    rc: int
    stdout: str
    stderr: str
    tasks: dict  # task name -> result dict (for localhost)

    def __getitem__(self, task_name: str) -> dict:
        return self.tasks[task_name]


def ansible_environ(**overrides: str) -> dict:
    """This process's environment plus what ``make`` exports for Ansible (the collection found
    through ANSIBLE_COLLECTIONS_PATH only), without colour or retry files."""
    environ = dict(os.environ)
    environ.update(
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="false",
        ANSIBLE_LOCALHOST_WARNING="false",
    )
    environ.update(overrides)
    return environ


def run_playbook(
    tmp_path,
    tasks: list,
    *,
    module_defaults=None,
    verbosity: int = 0,
    check: bool = False,
    diff: bool = False,
    json_output: bool = True,
    env: dict | None = None,
    timeout: float = 600,
) -> PlaybookRun:
    """Write ``tasks`` into a one-play playbook and run it; returns rc, output and task results."""
    play = {"name": "test", "hosts": "localhost", "gather_facts": False, "tasks": tasks}
    if module_defaults:
        play["module_defaults"] = {"group/crawl.egress_proxies.egress_proxies": module_defaults}
    path = tmp_path / ("play-%d.yml" % len(list(tmp_path.glob("play-*.yml"))))
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    environ = ansible_environ(ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    if json_output:
        environ["ANSIBLE_STDOUT_CALLBACK"] = "task_results"
        environ["ANSIBLE_CALLBACK_PLUGINS"] = os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "callback_plugins"
        )
    environ.update(env or {})
    argv = [ANSIBLE_PLAYBOOK, str(path)]
    if verbosity:
        argv.append("-" + "v" * verbosity)
    if check:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    proc = subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=timeout, check=False)
    tasks_by_name = {}
    if json_output:
        start = proc.stdout.find('{"tasks": ')
        if start >= 0:
            tasks_by_name = json.loads(proc.stdout[start:])["tasks"]
    return PlaybookRun(proc.returncode, proc.stdout, proc.stderr, tasks_by_name)
