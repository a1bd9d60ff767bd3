# -*- coding: utf-8 -*-
"""Test-only stdout callback: prints one JSON document with every task's result by task name.

ansible-core no longer ships a JSON stdout callback (it moved to ansible.posix), and the tests
must read module results, never parse human output.
"""

from __future__ import annotations

import json

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: task_results
type: stdout
short_description: JSON results by task name (tests only)
description: Prints a JSON document with every task's result, by task name, at the end of the run.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "task_results"

    def __init__(self):
        super().__init__()
        self.results = {}

    def _store(self, result, **extra):
        data = dict(result._result)
        data.update(extra)
        self.results[result._task.get_name()] = data

    def v2_runner_on_ok(self, result):
        self._store(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._store(result, failed=True)

    def v2_runner_on_unreachable(self, result):
        self._store(result, unreachable=True)

    def v2_playbook_on_stats(self, stats):
        self._display.display(json.dumps({"tasks": self.results}, default=str))
