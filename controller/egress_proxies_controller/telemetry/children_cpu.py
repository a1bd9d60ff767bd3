"""``egress_proxies_children_cpu_seconds_total``: the CPU seconds of the child processes the
controller waited for (ansible-runner runs, ansible-playbook, the modules).

The kernel only adds to a process's waited-for children's times, so the figure is a counter
(``rate()`` of it is the cores the runs use); it is read at scrape time, as prometheus_client's
ProcessCollector reads ``process_cpu_seconds_total``.
"""

from __future__ import annotations

import os

from prometheus_client.core import CounterMetricFamily

NAME = "egress_proxies_children_cpu_seconds"  # the exposition adds _total to a counter's samples


class ChildrenCpu:
    """A collector (anything with ``collect``) of one counter, read from ``os.times()``."""

    def collect(self):
        times = os.times()  # one read: user and system of the same moment
        yield CounterMetricFamily(
            NAME,
            "CPU seconds of the child processes the controller waited for (ansible-runner runs and "
            "their modules); with process_cpu_seconds_total, what the controller costs in all.",
            value=times.children_user + times.children_system,
        )
