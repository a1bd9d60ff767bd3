"""The provider health monitor's log (issue 41, point 7): a round at start, before the providers
file has validated, waits for it instead of warning; a failed check is one line."""

from __future__ import annotations

import logging
import threading

from egress_proxies_controller.loops.provider_checks import ProviderHealthMonitor
from egress_proxies_controller.runs.executor import RunFailed


class Executor:
    """The executor's providers file (set when the first one validates) and its check round."""

    def __init__(self, providers_file=None, fails: str = ""):
        self.providers_file, self.fails, self.checks = providers_file, fails, 0

    def check(self, _timeout: float) -> dict:
        self.checks += 1
        if not self.providers_file:  # as Executor.run_playbook refuses
            raise RunFailed("no valid providers file yet")
        if self.fails:
            raise RunFailed(self.fails)
        return {"providers": []}


class Kube:
    def list_cluster_objects(self, _plural: str, _selector: str) -> list:
        return []


def monitor(executor, interval: float = 2.0) -> ProviderHealthMonitor:
    return ProviderHealthMonitor(executor, Kube(), metrics=None, interval=interval, round_timeout=5)


def test_a_round_waits_for_the_first_valid_providers_file_without_a_warning(caplog):
    executor = Executor()
    threading.Timer(0.5, lambda: setattr(executor, "providers_file", "/private/providers.yaml")).start()
    with caplog.at_level(logging.DEBUG, logger="egress_proxies_controller"):
        monitor(executor).round()
    assert executor.checks == 1
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_providers_file_that_never_validates_skips_the_round_quietly(caplog):
    executor = Executor()
    with caplog.at_level(logging.DEBUG, logger="egress_proxies_controller"):
        monitor(executor, interval=0.4).round()
    assert executor.checks == 0
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []  # said where it is read


def test_a_failed_check_is_one_line(caplog):
    executor = Executor("/private/providers.yaml", fails="run timed out")
    with caplog.at_level(logging.INFO, logger="egress_proxies_controller"):
        monitor(executor).round()
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == ["provider checks: run timed out; trying again in 2s"]
