"""operations.await_done: a firewall rule's operation is polled to DONE within the deadline."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import (
    Deadline,
    DeadlineExceeded,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import operations
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.classify import (
    OperationFailed,
)


def test_polls_until_done_and_raises_its_error():
    answers = iter(
        [
            {"name": "op", "status": "RUNNING"},
            {"name": "op", "status": "DONE", "error": {"errors": [{"code": "X"}]}},
        ]
    )
    with pytest.raises(OperationFailed, match="X"):
        operations.await_done(
            {"name": "op", "status": "PENDING"}, lambda _n: next(answers), Deadline(5), poll=0.01
        )


def test_done_at_once_makes_no_read():
    op = {"name": "op", "status": "DONE"}
    assert operations.await_done(op, lambda _n: pytest.fail("read"), Deadline(5)) is op


def test_an_unfinished_operation_without_a_name_cannot_be_awaited():
    with pytest.raises(OperationFailed):
        operations.await_done({"status": "RUNNING"}, lambda _n: pytest.fail("read"), Deadline(5))


def test_the_wait_ends_at_the_deadline():
    with pytest.raises(DeadlineExceeded):
        operations.await_done(
            {"name": "op", "status": "RUNNING"},
            lambda n: {"name": n, "status": "RUNNING"},
            Deadline(0.2),
            poll=0.05,
        )
