"""``--follow-starting`` (issue 38): how long a create's run reads the instances it left starting.
Unset, it is 30 s, or a quarter of ``--run-timeout`` when that is less, so a short run timeout
set on its own (the fault matrix's 6 s) is never refused for a window nobody asked for; set, it
is what was asked (its limits are refused at start: test_startup_errors.py)."""

from __future__ import annotations

import pytest
from egress_proxies_controller.__main__ import follow_window
from egress_proxies_controller.flags import parser


@pytest.mark.parametrize(
    ("argv", "window"),
    [
        ([], 30.0),
        (["--run-timeout", "6"], 1.5),
        (["--run-timeout", "6", "--follow-starting", "0"], 0.0),
        (["--follow-starting", "45"], 45.0),
    ],
)
def test_the_window_a_run_follows_for(argv, window):
    assert follow_window(parser().parse_args(["--providers-file", "p.yaml", *argv])) == window
