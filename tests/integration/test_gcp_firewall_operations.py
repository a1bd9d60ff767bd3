"""The managed firewall rule's operations are waited for and their errors reported (issue 28
§6), over the real client against the fake, whose rule operations pass PENDING, RUNNING, DONE.

Nothing reads a firewall rule back after it was accepted, so an insert or patch that fails
later (an invalid range, a quota) would leave every VM unreachable on the proxy port while
``present`` reported success. Create must wait for the rule's operation, within its deadline,
and fail with the operation's error before it inserts any VM.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from contract.gcp_backend import gcp_backend

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert

REFUSED = ("INVALID_FIELD_VALUE", "Invalid value for field 'resource.sourceRanges[0]'", 400, "BAD REQUEST")
QUOTA = ("QUOTA_EXCEEDED", "Quota 'FIREWALLS' exceeded.  Limit: 100.0 globally.", 403, "FORBIDDEN")


backend = gcp_backend  # the harness fixture (its own fake API server), by its name


def _rule_provider(backend, port_ranges=("127.0.0.0/8",)):
    return backend.build(manageFirewall=True, firewallSourceRanges=list(port_ranges))


def _failure(call) -> errors.ProviderError:
    with pytest.raises(errors.ProviderError) as exc_info:
        call()
    return exc_info.value


def test_a_rule_insert_that_fails_after_acceptance_fails_create_before_any_vm(backend):
    provider = _rule_provider(backend)
    backend.fake.state.firewall_failure = REFUSED
    exc = _failure(lambda: provider.create(backend.request(str(uuid.uuid4())), Deadline(10)))
    assert errors.class_of(exc) == errors.PERMANENT and "INVALID_FIELD_VALUE" in str(exc)
    assert backend.fake.log(method="POST", path=r"instances$") == []


def test_a_rule_patch_that_fails_is_reported_with_its_class(backend):
    provider = _rule_provider(backend)
    provider.create(backend.request(str(uuid.uuid4())), Deadline(10))
    drifted = _rule_provider(backend, ("127.1.0.0/16",))  # same rule name, other ranges: a patch
    backend.fake.state.firewall_failure = QUOTA
    exc = _failure(lambda: drifted.create(backend.request(str(uuid.uuid4())), Deadline(10)))
    assert errors.class_of(exc) == errors.QUOTA_EXCEEDED and "QUOTA_EXCEEDED" in str(exc)
    assert len(backend.fake.log(method="PATCH")) == 1


def test_create_waits_until_the_rule_operation_is_done(backend):
    provider = _rule_provider(backend)
    provider.create(backend.request(str(uuid.uuid4())), Deadline(10))
    name = insert.firewall_name("contract-gcp", backend.installation, 3128)
    polls = backend.fake.log(method="GET", path=r"^global/operations/")
    assert polls, "the rule's operation was never read back"
    (op,) = backend.fake.state.global_operations.values()
    assert op["status"] == "DONE" and op["targetLink"].endswith("/global/firewalls/" + name)
    # The VM's insert came only after the rule's operation ended.
    (vm_insert,) = backend.fake.log(method="POST", path=r"instances$")
    assert vm_insert.at >= polls[-1].at


def test_waiting_for_the_rule_is_bounded_by_the_deadline(backend):
    provider = _rule_provider(backend)
    # A rule operation that does not end in time (a copy: the harness's Timing is shared).
    backend.fake.state.timing = dataclasses.replace(backend.fake.state.timing, operation=60.0)
    exc = _failure(lambda: provider.create(backend.request(str(uuid.uuid4())), Deadline(1.5)))
    assert errors.class_of(exc) == errors.TRANSIENT
    assert backend.fake.log(method="POST", path=r"instances$") == []
