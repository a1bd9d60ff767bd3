# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Waiting for a Compute Engine operation the provider must see finish (issue 28 §6).

Instance operations are not awaited (the contract's create and delete return at once and
``get`` reads a failed insert back). A firewall rule's insert or patch is different: nothing
reads it back later, so a rule accepted and then refused (an invalid source range, a quota)
would leave every VM unreachable on the proxy port unnoticed. Such an operation is polled until
it is DONE, bounded by the caller's Deadline (``DeadlineExceeded``: Transient), and an error it
ends with is raised as ``OperationFailed`` (classified by classify.py).
"""

from __future__ import annotations

from collections.abc import Callable

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.classify import (
    OperationFailed,
)

POLL_SECONDS = 0.5  # real firewall operations take seconds; the fake's fractions of one


def await_done(op: dict, read: Callable[[str], dict], deadline, poll: float = POLL_SECONDS) -> dict:
    """``op`` once DONE (``read(name)`` fetches it again); ``OperationFailed`` if it failed."""
    while op.get("status") != "DONE":
        if not op.get("name"):
            raise OperationFailed(dict(op, httpErrorMessage="an unfinished operation without a name"))
        deadline.sleep(poll)
        op = read(op["name"])
    if op.get("error"):
        raise OperationFailed(op)
    return op
