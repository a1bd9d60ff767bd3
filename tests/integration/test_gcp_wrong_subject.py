"""Answers about another object than the one asked for (issue 28 §5), over the real client.

Something between the provider and Compute Engine (a misrouting proxy, a cache, a wrong
endpoint) may answer a request for one object with another object, with ``{}``, or with a
redirect to some page that says notFound. None of these is the API's answer about the object
asked for: each must be Transient, never an instance, never NotFound, and never lead to a
write (a DELETE, a firewall PATCH) decided on the wrong object's data.
"""

from __future__ import annotations

import json
import uuid

import pytest
from contract.gcp_backend import PROJECT, ZONE, gcp_backend

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert

backend = gcp_backend  # the harness fixture (its own fake API server), by its name


def _created(backend) -> tuple:
    """Two of our instances: the one asked for, and the other whose answer is sent instead."""
    target = backend.request(str(uuid.uuid4()))
    other = backend.request(str(uuid.uuid4()))
    target_id = backend.provider.create(target, Deadline(10))
    backend.provider.create(other, Deadline(10))
    return target, target_id, backend.fake.state.get_instance(ZONE, other.name)


def _answer(backend, path: str, body, method: str = "GET") -> None:
    backend.fake.inject(200, method=method, path=path, raw=json.dumps(body).encode(), times=-1)


def _class_of(call) -> str:
    with pytest.raises(errors.ProviderError) as exc_info:
        call()
    return errors.class_of(exc_info.value)


def test_get_answered_with_another_instance_is_transient_not_that_instance(backend):
    target, target_id, other = _created(backend)
    _answer(backend, r"instances/%s$" % target.name, other)
    assert _class_of(lambda: backend.provider.get(target_id, Deadline(10))) == errors.TRANSIENT


def test_delete_answered_with_another_instance_sends_no_delete(backend):
    target, target_id, other = _created(backend)
    _answer(backend, r"instances/%s$" % target.name, other)
    assert _class_of(lambda: backend.provider.delete(target_id, Deadline(10))) == errors.TRANSIENT
    assert backend.fake.log(method="DELETE") == []


def test_an_empty_object_is_no_instance_and_absent_stays_transient(backend):
    target, target_id, _other = _created(backend)
    _answer(backend, r"instances/%s$" % target.name, {})
    assert _class_of(lambda: backend.provider.get(target_id, Deadline(10))) == errors.TRANSIENT
    assert _class_of(lambda: backend.provider.delete(target_id, Deadline(10))) == errors.TRANSIENT


def test_another_projects_instance_of_the_same_name_is_not_ours(backend):
    target, target_id, _other = _created(backend)
    body = backend.fake.state.get_instance(ZONE, target.name)
    foreign = json.loads(json.dumps(body).replace("/projects/%s/" % PROJECT, "/projects/elsewhere/"))
    _answer(backend, r"instances/%s$" % target.name, foreign)
    assert _class_of(lambda: backend.provider.get(target_id, Deadline(10))) == errors.TRANSIENT


def test_a_redirect_to_a_not_found_page_proves_nothing(backend):
    target = backend.request(str(uuid.uuid4()))
    target_id = "zones/%s/instances/%s" % (ZONE, target.name)
    elsewhere = "%s/compute/v1/projects/%s/elsewhere" % (backend.fake.endpoint, PROJECT)
    backend.fake.inject(
        302, method="GET", path=r"instances/%s$" % target.name, headers={"Location": elsewhere}
    )
    message = "The resource 'projects/%s/zones/%s/instances/%s' was not found" % (PROJECT, ZONE, target.name)
    backend.fake.inject(404, reason="notFound", message=message, method="GET", path=r"^elsewhere$")
    assert _class_of(lambda: backend.provider.get(target_id, Deadline(10))) == errors.TRANSIENT
    assert backend.fake.log(path=r"^elsewhere$") == []  # never followed


def test_operations_about_another_instance_are_not_this_ones(backend):
    """A running delete of another instance must not make delete skip this one's."""
    _target, target_id, other = _created(backend)
    backend.provider.delete("zones/%s/instances/%s" % (ZONE, other["name"]), Deadline(10))
    theirs = [
        o
        for o in backend.fake.state.list_operations(ZONE, "", 0, "")["items"]
        if o["operationType"] == "delete"
    ]
    _answer(backend, r"^zones/%s/operations$" % ZONE, {"kind": "compute#operationList", "items": theirs})
    assert _class_of(lambda: backend.provider.delete(target_id, Deadline(10))) == errors.TRANSIENT
    assert [r.path for r in backend.fake.log(method="DELETE")] == [
        "zones/%s/instances/%s" % (ZONE, other["name"])
    ]


def test_a_firewall_answer_about_another_rule_is_not_patched(backend):
    provider = backend.build(manageFirewall=True, firewallSourceRanges=["127.0.0.0/8"])
    wanted = insert.firewall_name("contract-gcp", backend.installation, 3128)
    _answer(backend, r"^global/firewalls/%s$" % wanted, {"name": "someone-elses-rule", "allowed": []})
    req = backend.request(str(uuid.uuid4()))
    assert _class_of(lambda: provider.create(req, Deadline(10))) == errors.TRANSIENT
    assert backend.fake.log(method="PATCH") == [] and backend.fake.log(method="POST") == []


def test_a_listed_instance_outside_its_scope_fails_the_list(backend):
    _target, _target_id, other = _created(backend)
    page = {"items": {"zones/us-central1-b": {"instances": [other]}}}
    _answer(backend, r"^aggregated/instances$", page)
    assert _class_of(lambda: backend.provider.list_by_tag(Deadline(10))) == errors.TRANSIENT
