"""The controller's log as an operator reads it (issue 41, point 7): the real controller on the
test API server, run through a start, a Proxy's create and delete and a clean SIGTERM, writes
one line per record and nothing at WARNING or above while nothing is wrong; an API error is one
line that says what is wrong, once; ``--help`` tells every boolean flag's default truly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from . import e2e_lib, promtool, test_e2e

pytestmark = [pytest.mark.squid]

controller_api = e2e_lib.controller_api

# The text format's record: a timestamp, then the level (trace ids and the like may follow).
RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


def test_a_clean_run_logs_no_warning_and_one_line_per_record(
    controller_api, kube_cluster, kube_namespace, tmp_path
):
    """Every problem of the log is listed at once (a test stopping at the first would hide the
    others); the scrape taken after the reconciles is judged by promtool on the way."""
    env = test_e2e.E2E(controller_api, kube_cluster, kube_namespace, tmp_path)
    # The provider health monitor on, every second: it meets the providers file before it validates.
    env.controller.start(extra_args=["--health-check-interval", "1"])
    try:
        env.controller.wait_ready()
        env.create("logged", {"provider": "local"})
        env.wait_ready("logged")
        time.sleep(2)  # a few more ticks, probes and health rounds
        scrape = env.controller.metrics()
        env.delete("logged")
        env.wait_gone("logged")
    finally:
        env.cleanup()  # SIGTERM, exit code 0 asserted
    problems = []
    try:
        promtool.check_metrics(scrape)
    except AssertionError as exc:
        problems.append(str(exc))
    with open(env.controller.log_path, encoding="utf-8") as handle:
        text = handle.read()
    if "DeprecationWarning" in text:
        problems.append("a dependency's DeprecationWarning in the log")
    lines = [(RECORD.match(line), line) for line in text.splitlines()]
    problems += ["not a record of its own: %s" % line for m, line in lines if not m]
    problems += [
        "nothing was wrong, yet: %s" % line
        for m, line in lines
        if m and m["level"] in ("WARNING", "ERROR", "CRITICAL")
    ]
    messages = [line for m, line in lines if m]
    if not any(line.endswith(" manager stopped") for line in messages) or not messages[-1].endswith(
        " stopped"
    ):
        problems.append("no clean stop at the end")
    assert problems == [], "\n".join(problems) + "\n--- the whole log:\n" + text


def test_an_api_error_is_one_line_once(controller_api, kube_cluster, kube_namespace, tmp_path):
    """The shipped RBAC grants Leases in the controller's namespace only: a Lease elsewhere is
    refused (403) on every attempt, every --retry-period."""
    env = test_e2e.E2E(controller_api, kube_cluster, kube_namespace, tmp_path)
    env.controller.start(extra_args=["--leader-election-namespace", kube_namespace, "--retry-period", "0.5"])
    try:
        deadline = time.monotonic() + 30
        while "leader election" not in env.controller.tail() and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)  # several more refused attempts
    finally:
        assert env.controller.stop() == 0, env.controller.tail()
    with open(env.controller.log_path, encoding="utf-8") as handle:
        text = handle.read()
    records = [RECORD.match(line) for line in text.splitlines()]
    assert all(records), "each record one line:\n" + text
    loud = [m.string for m in records if m["level"] not in ("DEBUG", "INFO")]
    assert len(loud) == 1, "one problem, one line:\n" + text
    (line,) = loud
    assert "403" in line and "Forbidden" in line and kube_namespace in line, line
    assert "HTTP response headers" not in text and "Audit-Id" not in text, line


def boolean_help_lines() -> dict:
    """First option string -> its line of ``--help``, for every option that takes no value (a
    wide terminal: one line each)."""
    out = subprocess.run(
        [sys.executable, "-m", "egress_proxies_controller", "--help"],
        env=dict(os.environ, COLUMNS="1000", PYTHONPATH=os.path.join(e2e_lib.ROOT, "controller")),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines, text = {}, out.splitlines()
    for i, line in enumerate(text):
        # Options without a metavar, then their help two or more spaces on (or on the next
        # line when the options are too long to leave room).
        m = re.match(r"^\s+(-[\w-]+(?:, -[\w-]+)*)(?:\s{2,}|$)", line)
        if m and m[1] not in ("-h, --help", "--version"):
            lines[m[1].split(", ")[0]] = line if line.strip() != m[1] else line + text[i + 1]
    return lines


def test_help_tells_every_boolean_flags_default_truly():
    """A boolean flag's ``(default: X)`` is about the flag named first on its line: True when
    leaving every flag out does what that flag does, False when it takes the flag to do it."""
    from egress_proxies_controller import flags

    lines = boolean_help_lines()
    assert {"--leader-elect", "--metrics-insecure", "--gc-dry-run", "--ansible-fork-server"} <= set(lines)
    base = ["--providers-file", "x"]
    unset = vars(flags.parser().parse_args(base))
    for flag, line in lines.items():
        given = vars(flags.parser().parse_args([*base, flag]))
        want = "(default: %s)" % (unset == given)
        assert want in line, "%s: %r should say %s" % (flag, line.strip(), want)
