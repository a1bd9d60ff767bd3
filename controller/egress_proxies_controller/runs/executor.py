"""The executor: runs one provider's calls of a tick as ONE ansible-runner run of the modules.

Creates and deletes go into one ``proxy_instance`` task in its batch form; gets go into one
``proxy_info`` task (by ids, or, with many gets this tick, one ``list_by_tag`` whose misses are
re-read by id). The manager gives each provider its own runs (and slots), so a stuck backend
holds only its own Proxies. Results are read from the runner's events (the task's ``res``),
never from its stdout: a run that fails, times out or is cancelled still answers every item
whose task had finished, and only the others become Transient.

A run stops for real: every process it started (found by a mark in its environment, whatever
session ansible's workers moved to) is killed before any of its items is answered, so a retry
is never the second actor on a backend. No run starts once ``may_run()`` says this replica may
no longer lead, and ``abort_all`` cancels the runs in flight and kills their processes.

Secrets never reach disk: the payload (cloud-init included) is handed to the playbook in an
anonymous in-memory file (memfd), the modules run with pipelining (their arguments go on stdin,
never into an AnsiballZ file), the module's ``cloud_init`` option is ``no_log`` so the runner's
events carry it masked, and the private run directories are removed at start and at exit.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from ..telemetry import runner_phases, tracing
from . import batch, process_tree
from . import work_dir as work_dir_mod
from .item_feed import ItemFeed
from .playbook_launcher import PlaybookLauncher
from .playbooks import CHECK_PLAYBOOK, GC_PLAYBOOK, PLAYBOOK
from .result_pipe import ResultPipe

log = logging.getLogger("egress_proxies_controller.runs.executor")


FEED_MARGIN = 10.0  # seconds kept between a fed item's call and follow and the run's timeout
MAX_EVENT_RES = 256 * 1024 * 1024  # characters of one task result (10,000 instances: ~6 MB)


class RunFailed(Exception):
    """The runner run as a whole did not produce results."""


class RunResult(dict):
    """Each finished task's ``res`` by task name; ``failure`` says why the run did not finish
    (its other tasks have no result), empty when it did."""

    failure = ""


class Executor:
    def __init__(
        self,
        work_dir: str,
        providers_file: str | None,
        *,
        run_timeout: float = 300.0,
        call_timeout: float = 120.0,
        concurrency: int = 16,
        follow: float = 0.0,
        list_threshold: int = 10,
        keep_artifacts: int = 5,
        collections_path: str | None = None,
        metrics=None,
        may_run=lambda: True,
        identity: str = "",
        run_log: str = "",
        heartbeat: str = "",
        renew_deadline: float = 10.0,
        fork_server: bool = True,
        identity_env: dict | None = None,
    ):
        self.work_dir = work_dir
        # The controller's --kubeconfig/--context as K8S_AUTH_* (identity.py): one identity.
        self.identity_env = dict(identity_env or {})
        self.providers_file = providers_file
        self.run_timeout = run_timeout
        self.call_timeout = call_timeout
        self.concurrency = concurrency
        self.follow = follow  # seconds a run reads the instances it left starting (0: off)
        self.list_threshold = list_threshold
        self.keep_artifacts = keep_artifacts
        self.collections_path = collections_path
        self.metrics = metrics
        self.may_run = may_run  # False once this replica may no longer lead: no run starts
        self.identity, self.run_log = identity, run_log
        self.heartbeat, self.renew_deadline = heartbeat, renew_deadline  # see run_watchdog
        self.cancel = threading.Event()  # set: every run in flight is cancelled
        self.runs = 0
        self._lock = threading.Lock()
        self._active = set()  # run dirs in use: never rotated away
        self._running = {}  # run id -> run dir, while its processes may live
        work_dir_mod.prepare(work_dir)  # ours, or refused (runs/work_dir.py)
        self.launcher = PlaybookLauncher(work_dir, fork_server)
        self.close()  # what an earlier process left (after a SIGKILL) is never read again

    # -- public ------------------------------------------------------------------------

    def feed_window(self) -> float:
        """Seconds from its start during which a run may be fed more items (``ItemFeed``): an
        item fed last still has its call and its follow before the run's timeout; 0: none."""
        return max(0.0, self.run_timeout - self.call_timeout - self.follow - FEED_MARGIN)

    def new_feed(self) -> ItemFeed:
        """A feed for one run's further items (``execute(feed=...)``)."""
        return ItemFeed()

    def execute(
        self, actions: dict, create_fields: dict, on_answer=None, feed: ItemFeed | None = None
    ) -> dict:
        """``{key: Action}`` -> ``{key: Answer}`` through one run (and a second for the ids a
        list did not show: only a get can say NotFound). ``create_fields`` as ``batch.encode``
        takes them. ``on_answer(key, answer)`` hears each create's and delete's answer as soon
        as its item finishes, on another thread (result_pipe.py); the returned answers still
        hold every key. ``feed``: more creates and deletes handed to the run while it works
        (closed by the caller; released here when the run ends); their answers come the same
        ways, and the returned answers hold them too."""
        items = batch.encode(actions, create_fields, self.list_threshold)
        answers, by_id, lists, gets = items.answers, items.by_id, items.lists, items.gets
        if feed is not None and not items.instances:
            feed.release()  # no instances task reads it: what is offered goes to another run
            feed = None
        if items.empty:
            return answers
        try:
            events = self._run(items.instances, by_id, lists, (items.instance_keys, on_answer), feed)
        except RunFailed as exc:
            batch.failed(
                (feed.keys if feed else items.instance_keys)
                + [k for entries in gets.values() for k, _pid in entries],
                str(exc),
                answers,
            )
            return answers
        instance_keys = feed.keys if feed else items.instance_keys  # listed, then fed
        # A run that failed or timed out still answers every item whose task had finished.
        failure = getattr(events, "failure", "")
        if failure and "instances" not in events:
            batch.failed(instance_keys, failure, answers)
        else:
            batch.read_instances(events.get("instances"), instance_keys, answers)
        if failure and "gets" not in events:
            batch.failed((k for entries in by_id.values() for k, _pid in entries), failure, answers)
        else:
            batch.read_gets(events.get("gets"), by_id, answers)
        if failure and "lists" not in events:
            batch.failed((k for p in lists for k, _pid in gets[p]), failure, answers)
            return answers
        misses = batch.read_lists(events.get("lists"), {p: gets[p] for p in lists}, answers)
        if misses:  # not in a (possibly partial) list: only a get can say NotFound
            try:
                events = self._run([], misses, [])
                batch.read_gets(events.get("gets"), misses, answers)
            except RunFailed as exc:
                batch.failed((k for entries in misses.values() for k, _pid in entries), str(exc), answers)
        return answers

    # -- the run -----------------------------------------------------------------------

    def _run(
        self,
        instances: list,
        gets: dict,
        lists: list,
        stream: tuple = ((), None),
        feed: ItemFeed | None = None,
    ) -> dict:
        """One batch run; ``stream``: (the instances' keys, ``on_answer``) to stream them to;
        ``feed``: more instances, whose keys follow the listed ones in ``feed.keys``."""
        keys, on_answer = stream
        if feed is not None:
            feed.start(list(keys))
            keys = feed.keys  # the one list: a fed item's key is there before its line
        else:
            keys = list(keys)
        pipe = ResultPipe(keys, on_answer) if instances and on_answer is not None else None
        items = batch.payload(
            instances,
            gets,
            lists,
            self.concurrency,
            self.call_timeout,
            pipe.path if pipe else "",
            follow=self.follow,
            feed=feed.path if feed else "",
        )
        try:
            return self.run_playbook("batch.yml", PLAYBOOK, items, batch.label(instances, gets, lists))
        finally:
            if feed is not None:
                feed.release()  # nothing more is taken; the module has read what it will
                if feed.fed:
                    log.info("runner run batch.yml was fed %d more instances while it worked", len(feed.fed))
                    if self.metrics is not None:
                        self.metrics.items_fed(len(feed.fed))
            if pipe is not None:
                pipe.close()

    def validate(self, providers_file: str, names: list) -> list:
        """The problems the modules find in ``providers_file`` (none: they accept it). One
        ``proxy_info`` with no ids parses the whole file and builds a provider, calling no
        backend. Raises ``RunFailed`` when the check itself could not run."""
        payload = {
            "instances": [],
            "gets": [{"provider": names[0], "ids": []}] if names else [],
            "lists": [],
            "concurrency": 1,
            "call_timeout": self.call_timeout,
        }
        results = self.run_playbook(
            "validate.yml", PLAYBOOK, payload, "validate", providers_file=providers_file, timeout=120
        )
        problems = []
        for item in (results.get("gets") or {}).get("results") or []:
            problems.extend(item.get("problems") or [])
        return problems

    def gc(self, live_uids: list, min_age_seconds: float, dry_run: bool, uid_shards=None) -> dict:
        """One ``proxy_gc`` sweep over every provider; returns the module's result.
        ``uid_shards`` ({count, owned}) limits what it collects to this replica's shards."""
        payload = {
            "live_uids": list(live_uids),
            "min_age": "%ds" % int(min_age_seconds),
            "dry_run": dry_run,
            "call_timeout": self.call_timeout,
        }
        if uid_shards is not None:
            payload["uid_shards"] = uid_shards
        results = self.run_playbook("gc.yml", GC_PLAYBOOK, payload, "gc live=%d" % len(live_uids))
        return results.get("gc") or {}

    def check(self, round_timeout: float) -> dict:
        """One ``proxy_check`` round over every provider; returns the module's result."""
        payload = {"timeout": round_timeout}
        results = self.run_playbook("check.yml", CHECK_PLAYBOOK, payload, "check", timeout=round_timeout + 60)
        return results.get("check") or {}

    def run_playbook(
        self,
        name: str,
        text: str,
        payload: dict,
        label: str,
        timeout: float | None = None,
        providers_file: str | None = None,
    ) -> dict:
        """Run one of the controller's playbooks with ``payload`` (a private file); returns each
        task's ``res`` by task name. Raises ``RunFailed`` when the run produced no results."""
        import ansible_runner  # imported here: the reconciler tests need no runner installed

        if not (providers_file or self.providers_file):
            raise RunFailed("no valid providers file yet")
        if not self.may_run():
            raise RunFailed("not starting a run: this replica may no longer lead")
        # Each run has its own private data dir: runs in flight must never share extravars,
        # env files or artifacts.
        runs_dir = work_dir_mod.private_dir(os.path.join(self.work_dir, "runs"))
        with self._lock:  # created and registered at once, so rotation never takes it
            run_dir = tempfile.mkdtemp(prefix="%s-" % time.strftime("%Y%m%dT%H%M%S"), dir=runs_dir)
            self._active.add(os.path.basename(run_dir))
        project = os.path.join(run_dir, "project")
        os.makedirs(project, mode=0o700)
        with open(os.path.join(project, name), "w") as handle:
            handle.write(text)
        run_id = uuid.uuid4().hex
        # The payload (cloud-init included) lives in memory only: the playbook reads it through
        # this process's /proc entry for the descriptor, so a SIGKILL leaves nothing on disk.
        items_fd = os.memfd_create("egress-proxies-items", os.MFD_CLOEXEC)
        items_file = "/proc/%d/fd/%d" % (os.getpid(), items_fd)
        with self._lock:
            self._running[run_id] = run_dir
        try:
            os.write(items_fd, json.dumps(payload).encode())
            envvars = {
                "EGRESS_PROXIES_PROVIDERS_FILE": providers_file or self.providers_file,
                "ANSIBLE_LOCALHOST_WARNING": "false",
                "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
                # Module arguments go to the module on its stdin, never into an AnsiballZ file.
                "ANSIBLE_PIPELINING": "true",
                "ANSIBLE_KEEP_REMOTE_FILES": "false",
                process_tree.RUN_ENV: run_id,
                # ansible-runner replaces a task result longer than this with {} (700,000
                # characters by default): a list of 2000 Pods was answered as nothing and every
                # Proxy of the round re-read one by one. A run's results are read whole.
                "MAX_EVENT_RES": str(MAX_EVENT_RES),
                "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
            }
            envvars.update(self.identity_env)
            if self.collections_path:
                envvars["ANSIBLE_COLLECTIONS_PATH"] = self.collections_path
            started, started_at = time.monotonic(), time.time()
            with self._lock:
                self.runs += 1
            self.record("start", run_id, label)
            span_attributes = {"runner.playbook": name, "runner.label": label, "runner.run_id": run_id}
            with tracing.tracer().start_as_current_span("runner.run", attributes=span_attributes) as span:
                envvars.update(tracing.run_environment())  # the modules' spans are its children
                status = "error"
                watchdog = self._watchdog(run_id)
                try:
                    runner = ansible_runner.run(
                        private_data_dir=run_dir,
                        **self.launcher.runner_arguments(name),
                        extravars={"items_file": items_file},
                        envvars=envvars,
                        quiet=True,
                        timeout=int(timeout or self.run_timeout),
                        cancel_callback=self.cancel.is_set,
                    )
                    status = runner.status
                except BaseException:
                    status = "error"
                    raise
                finally:
                    # A run that did not finish by itself (timeout, cancel, error): every process it
                    # started is gone before any of its items is answered. A finished run leaves only
                    # what its modules meant to leave running (a local provider's Squid carries the
                    # mark too, so nothing is swept after a successful run).
                    if status != "successful":
                        killed = process_tree.kill_run(run_id)
                        if killed:
                            log.warning("run %s %s: killed %d process(es) it left", name, status, killed)
                    self.record("end", run_id, label)
                    if watchdog is not None:
                        watchdog.kill()
                        watchdog.wait()
                span.set_attribute("runner.status", status)
            elapsed = time.monotonic() - started
            if self.metrics is not None:
                self.metrics.runner_run(
                    runner.status, elapsed, runner_phases.phases(runner.events, started_at, elapsed)
                )
            log.info("runner run %s status=%s %s seconds=%.2f", name, runner.status, label, elapsed)
            results = RunResult()
            for event in runner.events:
                if event.get("event") not in ("runner_on_ok", "runner_on_failed"):
                    continue
                data = event.get("event_data") or {}
                results[data.get("task")] = data.get("res") or {}
            if runner.status in ("timeout", "canceled"):
                results.failure = "ansible-runner run %s after %.0fs" % (runner.status, elapsed)
            elif runner.status != "successful":
                results.failure = "ansible-runner run %s (rc %s)" % (runner.status, runner.rc)
            if not results and results.failure:
                raise RunFailed(results.failure + " with no task results")
            for res in results.values():
                self._telemetry(res)
            return results
        finally:
            os.close(items_fd)
            with self._lock:
                self._running.pop(run_id, None)
            shutil.rmtree(os.path.join(run_dir, "env"), ignore_errors=True)
            with self._lock:
                self._active.discard(os.path.basename(run_dir))
            self._rotate(runs_dir)

    def _watchdog(self, run_id: str):
        """With leader election, a process that kills the run if the lease stops being renewed."""
        if not self.heartbeat:
            return None
        argv = [sys.executable, "-m", "egress_proxies_controller.runs.watchdog", run_id, self.heartbeat]
        argv += [str(self.renew_deadline), self.run_log, self.identity]
        return subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL)

    def runs_in_flight(self) -> int:
        """Runs started whose processes may still live (the in-flight gauge)."""
        with self._lock:
            return len(self._running)

    def abort_all(self) -> None:
        """Cancel every run and kill its processes now (leadership lost: nothing may go on)."""
        self.cancel.set()
        with self._lock:
            running = list(self._running)
        for run_id in running:
            process_tree.kill_run(run_id)
            self.record("killed", run_id, "aborted")  # the process may exit before the run's "end"

    def close(self) -> None:
        """Stop the fork server and remove the private run directories (their artifacts hold no
        secret, but nothing stays)."""
        self.launcher.close()
        shutil.rmtree(os.path.join(self.work_dir, "runs"), ignore_errors=True)

    def record(self, what: str, run_id: str, label: str) -> None:
        """Append a run's start or end to ``--run-log`` (JSON lines: who ran what when)."""
        if not self.run_log:
            return
        line = {"what": what, "run": run_id, "label": label, "identity": self.identity, "time": time.time()}
        with self._lock, open(self.run_log, "a") as handle:
            handle.write(json.dumps(line) + "\n")

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
