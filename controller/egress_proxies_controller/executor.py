"""The executor: runs a tick's provider calls as ONE ansible-runner run of the modules.

Creates and deletes go into one ``proxy_instance`` task in its batch form; gets go into one
``proxy_info`` task per provider (by ids, or, for providers with many gets this tick, one
``list_by_tag`` whose misses are re-read by id). Results are read from the runner's events
(the task's ``res``), never from its stdout. A run that fails as a whole, times out or is
cancelled turns into a Transient answer for each of its items.

Secrets: cloud-init content is written only into a 0600 items file inside the 0700 private data
dir, deleted as soon as the run ends; the module's ``cloud_init`` option is ``no_log``, so the
runner's events carry it masked. Artifacts are rotated (``--runner-keep-artifacts``).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time

from .reconciler import CREATE, DELETE, GET, NOT_FOUND, TRANSIENT, Action, Answer

log = logging.getLogger("egress_proxies_controller.executor")

PLAYBOOK = """\
- name: egress-proxies controller batch
  hosts: localhost
  gather_facts: false
  vars:
    batch: "{{ lookup('ansible.builtin.file', items_file) | from_json }}"
  tasks:
    - name: instances
      crawl.egress_proxies.proxy_instance:
        instances: "{{ batch.instances }}"
        invalid_items: fail_item
        concurrency: "{{ batch.concurrency }}"
        timeout: "{{ batch.call_timeout }}"
      when: batch.instances | length > 0
      ignore_errors: true

    - name: gets
      crawl.egress_proxies.proxy_info:
        provider: "{{ item.provider }}"
        ids: "{{ item.ids }}"
        concurrency: "{{ batch.concurrency }}"
        timeout: "{{ batch.call_timeout }}"
      loop: "{{ batch.gets }}"
      ignore_errors: true

    - name: lists
      crawl.egress_proxies.proxy_info:
        provider: "{{ item }}"
        timeout: "{{ batch.call_timeout }}"
      loop: "{{ batch.lists }}"
      ignore_errors: true
"""


GC_PLAYBOOK = """\
- name: egress-proxies controller orphan collection
  hosts: localhost
  gather_facts: false
  vars:
    batch: "{{ lookup('ansible.builtin.file', items_file) | from_json }}"
  tasks:
    - name: gc
      crawl.egress_proxies.proxy_gc:
        live_uids: "{{ batch.live_uids }}"
        min_age: "{{ batch.min_age }}"
        timeout: "{{ batch.call_timeout }}"
      check_mode: "{{ batch.dry_run }}"
      ignore_errors: true
"""

CHECK_PLAYBOOK = """\
- name: egress-proxies controller provider checks
  hosts: localhost
  gather_facts: false
  vars:
    batch: "{{ lookup('ansible.builtin.file', items_file) | from_json }}"
  tasks:
    - name: check
      crawl.egress_proxies.proxy_check:
        timeout: "{{ batch.timeout }}"
      ignore_errors: true
"""


class RunFailed(Exception):
    """The runner run as a whole did not produce results."""


class Executor:
    def __init__(
        self,
        work_dir: str,
        providers_file: str,
        *,
        run_timeout: float = 300.0,
        call_timeout: float = 120.0,
        concurrency: int = 16,
        list_threshold: int = 10,
        keep_artifacts: int = 5,
        collections_path: str | None = None,
        metrics=None,
    ):
        self.work_dir = work_dir
        self.providers_file = providers_file
        self.run_timeout = run_timeout
        self.call_timeout = call_timeout
        self.concurrency = concurrency
        self.list_threshold = list_threshold
        self.keep_artifacts = keep_artifacts
        self.collections_path = collections_path
        self.metrics = metrics
        self.runs = 0
        self._lock = threading.Lock()
        self._active = set()  # run dirs in use: never rotated away
        os.makedirs(work_dir, mode=0o700, exist_ok=True)
        os.chmod(work_dir, 0o700)

    # -- public ------------------------------------------------------------------------

    def execute(self, actions: dict, cloud_init) -> dict:
        """``{key: Action}`` -> ``{key: Answer}``; ``cloud_init(key)`` resolves a create's user-data
        (raising ``LookupError`` with a message when it cannot)."""
        answers, instances, instance_keys = {}, [], []
        gets = {}  # provider -> [(key, id)]
        for key, action in actions.items():
            if action.op in (CREATE, DELETE):
                item = {
                    "provider": action.provider,
                    "uid": action.uid,
                    "name": action.name,
                    "state": "present" if action.op == CREATE else "absent",
                }
                if action.provider_id:
                    item["id"] = action.provider_id
                if action.op == CREATE:
                    try:
                        item.update(cloud_init(key))
                    except LookupError as exc:
                        answers[key] = Answer(ok=False, error_class=TRANSIENT, message=str(exc))
                        continue
                instances.append(item)
                instance_keys.append(key)
            elif action.op == GET:
                gets.setdefault(action.provider, []).append((key, action.provider_id))
        lists = sorted(p for p, entries in gets.items() if len(entries) >= self.list_threshold)
        by_id = {p: entries for p, entries in gets.items() if p not in lists}
        if not instances and not gets:
            return answers
        try:
            events = self._run(instances, by_id, lists)
        except RunFailed as exc:
            for key in instance_keys + [k for entries in gets.values() for k, _pid in entries]:
                answers[key] = Answer(ok=False, error_class=TRANSIENT, message=str(exc))
            return answers
        self._read_instances(events.get("instances"), instance_keys, answers)
        self._read_gets(events.get("gets"), by_id, answers)
        misses = self._read_lists(events.get("lists"), {p: gets[p] for p in lists}, answers)
        if misses:  # not in a (possibly partial) list: only a get can say NotFound
            try:
                events = self._run([], misses, [])
                self._read_gets(events.get("gets"), misses, answers)
            except RunFailed as exc:
                for entries in misses.values():
                    for key, _pid in entries:
                        answers[key] = Answer(ok=False, error_class=TRANSIENT, message=str(exc))
        return answers

    # -- the run -----------------------------------------------------------------------

    def _run(self, instances: list, gets: dict, lists: list) -> dict:
        payload = {
            "instances": instances,
            "gets": [
                {"provider": p, "ids": [i for _key, i in entries]} for p, entries in sorted(gets.items())
            ],
            "lists": lists,
            "concurrency": self.concurrency,
            "call_timeout": self.call_timeout,
        }
        label = "instances=%d gets=%d lists=%d" % (
            len(instances),
            sum(len(v) for v in gets.values()),
            len(lists),
        )
        return self.run_playbook("batch.yml", PLAYBOOK, payload, label)

    def gc(self, live_uids: list, min_age_seconds: float, dry_run: bool) -> dict:
        """One ``proxy_gc`` sweep over every provider; returns the module's result."""
        payload = {
            "live_uids": list(live_uids),
            "min_age": "%ds" % int(min_age_seconds),
            "dry_run": dry_run,
            "call_timeout": self.call_timeout,
        }
        results = self.run_playbook("gc.yml", GC_PLAYBOOK, payload, "gc live=%d" % len(live_uids))
        return results.get("gc") or {}

    def check(self, round_timeout: float) -> dict:
        """One ``proxy_check`` round over every provider; returns the module's result."""
        payload = {"timeout": round_timeout}
        results = self.run_playbook("check.yml", CHECK_PLAYBOOK, payload, "check", timeout=round_timeout + 60)
        return results.get("check") or {}

    def run_playbook(
        self, name: str, text: str, payload: dict, label: str, timeout: float | None = None
    ) -> dict:
        """Run one of the controller's playbooks with ``payload`` (a private file); returns each
        task's ``res`` by task name. Raises ``RunFailed`` when the run produced no results."""
        import ansible_runner  # imported here: the reconciler tests need no runner installed

        # Each run has its own private data dir: runs in flight must never share extravars,
        # env files or artifacts.
        runs_dir = os.path.join(self.work_dir, "runs")
        os.makedirs(runs_dir, mode=0o700, exist_ok=True)
        with self._lock:  # created and registered at once, so rotation never takes it
            run_dir = tempfile.mkdtemp(prefix="%s-" % time.strftime("%Y%m%dT%H%M%S"), dir=runs_dir)
            self._active.add(os.path.basename(run_dir))
        project = os.path.join(run_dir, "project")
        os.makedirs(project, mode=0o700)
        with open(os.path.join(project, name), "w") as handle:
            handle.write(text)
        fd, items_file = tempfile.mkstemp(prefix="items-", suffix=".json", dir=run_dir)
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(payload, handle)
            envvars = {
                "EGRESS_PROXIES_PROVIDERS_FILE": self.providers_file,
                "ANSIBLE_LOCALHOST_WARNING": "false",
                "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
                "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
            }
            if self.collections_path:
                envvars["ANSIBLE_COLLECTIONS_PATH"] = self.collections_path
            started = time.monotonic()
            with self._lock:
                self.runs += 1
            runner = ansible_runner.run(
                private_data_dir=run_dir,
                playbook=name,
                extravars={"items_file": items_file},
                envvars=envvars,
                quiet=True,
                timeout=int(timeout or self.run_timeout),
            )
            elapsed = time.monotonic() - started
            if self.metrics is not None:
                self.metrics.runner_run(runner.status, elapsed)
            log.info("runner run %s status=%s %s seconds=%.2f", name, runner.status, label, elapsed)
            if runner.status in ("timeout", "canceled"):
                raise RunFailed("ansible-runner run %s after %.0fs" % (runner.status, elapsed))
            results = {}
            for event in runner.events:
                if event.get("event") not in ("runner_on_ok", "runner_on_failed"):
                    continue
                data = event.get("event_data") or {}
                results[data.get("task")] = data.get("res") or {}
            if not results and runner.status != "successful":
                raise RunFailed(
                    "ansible-runner run %s (rc %s) with no task results" % (runner.status, runner.rc)
                )
            for res in results.values():
                self._telemetry(res)
            return results
        finally:
            os.unlink(items_file)
            shutil.rmtree(os.path.join(run_dir, "env"), ignore_errors=True)
            with self._lock:
                self._active.discard(os.path.basename(run_dir))
            self._rotate(runs_dir)

    def _rotate(self, runs_dir: str) -> None:
        """Keep the newest ``keep_artifacts`` finished run dirs (for debugging; they hold no secret)."""
        with self._lock:
            finished = sorted(d for d in os.listdir(runs_dir) if d not in self._active)
            for name in finished[: max(0, len(finished) - self.keep_artifacts)]:
                shutil.rmtree(os.path.join(runs_dir, name), ignore_errors=True)

    def _telemetry(self, res: dict) -> None:
        if self.metrics is None:
            return
        records = list(res.get("telemetry") or [])
        for item in res.get("results") or []:  # loop results carry their own telemetry
            if isinstance(item, dict):
                records.extend(item.get("telemetry") or [])
        for record in records:
            self.metrics.provider_call(record)

    # -- reading results ---------------------------------------------------------------

    @staticmethod
    def _read_instances(res, keys: list, answers: dict) -> None:
        results = (res or {}).get("results")
        if not isinstance(results, list) or len(results) != len(keys):
            message = (res or {}).get("msg") or "proxy_instance returned no per-item results"
            for key in keys:
                answers[key] = Answer(
                    ok=False, error_class=(res or {}).get("error_class") or TRANSIENT, message=message
                )
            return
        for key, item in zip(keys, results, strict=True):
            if item.get("failed"):
                answers[key] = Answer(
                    ok=False,
                    error_class=item.get("error_class") or TRANSIENT,
                    message=item.get("msg", ""),
                    instance=item,
                )
            else:
                answers[key] = Answer(ok=True, instance=item)

    @staticmethod
    def _read_gets(res, gets: dict, answers: dict) -> None:
        per_provider = {}
        for item in (res or {}).get("results") or []:
            if isinstance(item, dict) and isinstance(item.get("item"), dict):
                per_provider[item["item"].get("provider")] = item
        for provider, entries in gets.items():
            result = per_provider.get(provider)
            if result is None or (
                result.get("failed")
                and not result.get("instances")
                and not result.get("not_found")
                and not result.get("errors")
            ):
                message = (result or {}).get(
                    "msg"
                ) or "proxy_info returned no result for provider %s" % provider
                cls = (result or {}).get("error_class") or TRANSIENT
                for key, _pid in entries:
                    answers[key] = Answer(ok=False, error_class=cls, message=message)
                continue
            found = {i["id"]: i for i in result.get("instances") or []}
            missing = set(result.get("not_found") or [])
            failed = {e["id"]: e for e in result.get("errors") or []}
            for key, provider_id in entries:
                if provider_id in found:
                    answers[key] = Answer(ok=True, instance=found[provider_id])
                elif provider_id in missing:
                    answers[key] = Answer(
                        ok=False, error_class=NOT_FOUND, message="%s not found" % provider_id
                    )
                elif provider_id in failed:
                    answers[key] = Answer(
                        ok=False,
                        error_class=failed[provider_id]["error_class"],
                        message=failed[provider_id]["msg"],
                    )
                else:
                    answers[key] = Answer(
                        ok=False, error_class=TRANSIENT, message="no answer for %s" % provider_id
                    )

    @staticmethod
    def _read_lists(res, lists: dict, answers: dict) -> dict:
        per_provider = {}
        for item in (res or {}).get("results") or []:
            if isinstance(item, dict):
                per_provider[item.get("item")] = item
        misses = {}
        for provider, entries in lists.items():
            result = per_provider.get(provider) or {}
            if result.get("errors") or not isinstance(result.get("instances"), list):
                misses[provider] = entries  # the list could not be read: fall back to gets
                continue
            found = {i["id"]: i for i in result["instances"]}
            for key, provider_id in entries:
                if provider_id in found:
                    answers[key] = Answer(ok=True, instance=found[provider_id])
                else:
                    misses.setdefault(provider, []).append((key, provider_id))
        return misses


def action_summary(action: Action) -> str:
    return "%s %s %s" % (action.op, action.provider, action.provider_id or action.name)
