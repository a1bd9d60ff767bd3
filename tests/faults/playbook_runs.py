"""``ansible-playbook`` runs of ``proxy_instance`` batches that a scenario can kill mid-way: the
play is written to a run directory, the process started in its own session, its output kept."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time

import yaml
from integration.playbook import ANSIBLE_PLAYBOOK, ansible_environ

PI = "crawl.egress_proxies.proxy_instance"
CALLBACKS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration", "callback_plugins"
)


def _item(target, uid: str, cloud_init: str, state: str) -> dict:
    """A batch item as the target's contract harness would request it (placement, namespace)."""
    req = target.request(uid)
    item = {"uid": uid, "placement": {k: v for k, v in dataclasses.asdict(req.placement).items() if v}}
    if target.column == "kubernetes":
        item["namespace"] = req.namespace
    if state == "present":
        item["cloud_init"] = cloud_init
    return item


def batch_play(target, uids: list, cloud_init: str, state: str = "present") -> list:
    items = [_item(target, u, cloud_init, state) for u in uids]
    task = {
        "name": "batch",
        PI: {
            "providers": [target.providers_entry()],
            "installation": target.installation,
            "provider": target.direct.name,
            "state": state,
            "concurrency": 1,
            "timeout": 30,
            "instances": items,
        },
    }
    return [{"name": "fault matrix", "hosts": "localhost", "gather_facts": False, "tasks": [task]}]


class PlaybookRun:
    def __init__(self, run_dir: str, play: list, label: str):
        os.makedirs(run_dir, exist_ok=True)
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, "%s.yml" % label)
        with open(self.path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(play, handle, sort_keys=False)
        self.out_path = os.path.join(run_dir, "%s.out" % label)
        temp = os.path.join(run_dir, "ansible-tmp")
        environ = ansible_environ(
            ANSIBLE_PIPELINING="true",  # as the controller runs the modules: arguments on stdin
            ANSIBLE_LOCAL_TEMP=temp,
            ANSIBLE_REMOTE_TEMP=temp,
            ANSIBLE_STDOUT_CALLBACK="task_results",  # tests/integration/callback_plugins
            ANSIBLE_CALLBACK_PLUGINS=CALLBACKS,
            ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        )
        self._out = open(self.out_path, "wb")  # noqa: SIM115 - closed in wait()
        self.process = subprocess.Popen(
            [ANSIBLE_PLAYBOOK, self.path],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env=environ,
            start_new_session=True,
        )

    def descendants(self) -> list:
        """Pids of the run's processes below ansible-playbook (the module and its shell)."""
        found, frontier = [], {self.process.pid}
        while frontier:
            children = set()
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open("/proc/%s/stat" % entry, encoding="utf-8") as handle:
                        ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if ppid in frontier:
                    children.add(int(entry))
            found.extend(sorted(children))
            frontier = children
        return found

    def wait(self, seconds: float = 180) -> int:
        try:
            return self.process.wait(timeout=seconds)
        finally:
            self._out.close()

    def output(self) -> str:
        with open(self.out_path, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def results(self) -> list:
        """The batch task's per-instance results, [] when it did not finish."""
        text = self.output()
        start = text.find('{"tasks": ')
        if start < 0:
            return []
        try:
            return json.loads(text[start:])["tasks"].get("batch", {}).get("results", [])
        except ValueError:
            return []


def files_under(directory: str) -> dict:
    """Every file below ``directory`` (path -> text), for the sentinel check."""
    found = {}
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as handle:
                    found[path] = handle.read().decode("utf-8", "replace")
            except OSError:
                continue
    return found


def wait_for(predicate, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
