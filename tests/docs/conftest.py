"""The closing note of the documentation tests: how many blocks ran, were only checked, and why."""

from __future__ import annotations

from . import tally


def pytest_terminal_summary(terminalreporter):
    if tally.OUTCOMES:
        terminalreporter.section("documentation blocks")
        for line in tally.summary():
            terminalreporter.write_line(line)
