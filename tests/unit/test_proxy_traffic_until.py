"""The tests' wait for a reconfiguring Squid (``proxy_traffic.until``) waits out every way a
reconfigure cuts a request, and still fails on anything else or when time runs out.

A SIGHUP'd Squid closes its listening socket and opens it again: a connect in between is
refused, a connection it had accepted is reset, or the reply stops before a whole status line.
CI's run of ded7646 failed on the reset, which the wait did not know.
"""

from __future__ import annotations

import http.client

import pytest
from proxy_traffic import until

CUTS = [ConnectionRefusedError(), ConnectionResetError(104, "reset"), http.client.BadStatusLine("")]


@pytest.mark.parametrize("cut", CUTS, ids=lambda e: type(e).__name__)
def test_a_request_cut_by_a_reconfigure_is_waited_out(cut):
    answers = iter([cut, cut, "served"])

    def check():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert until("served", check, seconds=5) == "served"


def test_any_other_error_is_not_swallowed():
    def check():
        raise ValueError("a bug in the check")

    with pytest.raises(ValueError):
        until("never", check, seconds=5)


def test_a_cut_that_never_heals_fails_naming_what_was_awaited():
    def check():
        raise ConnectionResetError(104, "reset")

    with pytest.raises(AssertionError, match="the new password accepted never happened"):
        until("the new password accepted", check, seconds=0.5)
