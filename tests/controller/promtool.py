"""Prometheus's own checker, ``promtool`` (Debian's ``prometheus`` package, installed by
``hack/bootstrap.sh test``), run on what the project ships: a scrape of the running controller
(``check metrics``), the PrometheusRule's groups (``check rules``) and their unit tests
(``test rules``). A missing promtool fails the test: it is part of the test profile.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import yaml

RULE_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prometheus_rule_test.yaml")


def binary() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: run hack/bootstrap.sh test (it installs Debian's prometheus package)"
    return path


def run(*args: str, stdin: str | None = None, cwd: str | None = None) -> str:
    """promtool's output; its refusal fails the test with what it said."""
    out = subprocess.run(
        [binary(), *args], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=60, check=False
    )
    assert out.returncode == 0, "promtool %s: exit %d\n%s%s" % (
        " ".join(args),
        out.returncode,
        out.stdout,
        out.stderr,
    )
    return out.stdout + out.stderr


def check_metrics(text: str) -> None:
    """``promtool check metrics`` on a scrape: it exits 0 with nothing to say, or names each
    problem (a gauge named like a counter, a missing HELP, a bad unit suffix)."""
    said = run("check", "metrics", stdin=text).strip()
    assert said == "", "promtool check metrics:\n" + said


def write_rule_groups(directory: str, groups: list) -> str:
    """A PrometheusRule's ``spec.groups`` as a Prometheus rules file in ``directory``."""
    path = os.path.join(directory, "prometheus_rule.rules.yaml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"groups": groups}, handle, sort_keys=False)
    return path
