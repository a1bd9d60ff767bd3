"""Unit tests for telemetry/observe.py: one record per call, with the configured name and the class."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe


class Scripted(contract.Provider):
    """Returns or raises whatever the test queued for the next call."""

    type_name = "scripted"

    def __init__(self, name="eu-1"):
        super().__init__(name, "inst")
        self.next = None
        self.closed = False

    def _answer(self, default):
        outcome, self.next = self.next, None
        if isinstance(outcome, BaseException):
            raise outcome
        return default if outcome is None else outcome

    def create(self, req, deadline):
        return self._answer("scripted/" + req.name)

    def get(self, provider_id, deadline):
        return self._answer(contract.Instance(id=provider_id, name="n", uid="u", state=contract.PROVISIONING))

    def delete(self, provider_id, deadline):
        return self._answer(None)

    def list_by_tag(self, deadline):
        return self._answer([])

    def id_for(self, name, placement, namespace=""):
        return "scripted/" + name

    def close(self):
        self.closed = True


class ScriptedChecker(Scripted, contract.Checker):
    def check(self, deadline):
        return [contract.TargetStatus("api", "x", True, contract.REASON_REACHABLE)]


def calls(provider):
    req = contract.CreateRequest(name="proxy-a", uid="u")
    deadline = Deadline(5)
    return {
        "create": lambda: provider.create(req, deadline),
        "get": lambda: provider.get("scripted/a", deadline),
        "delete": lambda: provider.delete("scripted/a", deadline),
        "list": lambda: provider.list_by_tag(deadline),
    }


@pytest.mark.parametrize("op", ["create", "get", "delete", "list"])
def test_ok_calls_are_recorded(op):
    telemetry = observe.Telemetry()
    wrapped = observe.observed(Scripted(), telemetry)
    calls(wrapped)[op]()
    (record,) = telemetry.records()
    assert record["op"] == op and record["provider"] == "eu-1" and record["class"] == observe.OK
    assert record["duration_seconds"] >= 0


@pytest.mark.parametrize("error_class", errors.CLASSES)
@pytest.mark.parametrize("op", ["create", "get", "delete", "list"])
def test_each_error_class_is_recorded_and_reraised(op, error_class):
    telemetry = observe.Telemetry()
    inner = Scripted()
    wrapped = observe.observed(inner, telemetry)
    raised = errors.wrap(error_class, op, inner.name, "scripted/a", "boom")
    inner.next = raised
    with pytest.raises(errors.ProviderError) as exc_info:
        calls(wrapped)[op]()
    assert exc_info.value is raised
    assert telemetry.records() == [
        {
            "op": op,
            "provider": "eu-1",
            "class": error_class,
            "duration_seconds": telemetry.records()[0]["duration_seconds"],
        }
    ]


def test_unclassified_exception_is_recorded_transient():
    telemetry = observe.Telemetry()
    inner = Scripted()
    inner.next = RuntimeError("surprise")
    with pytest.raises(RuntimeError):
        observe.observed(inner, telemetry).get("scripted/a", Deadline(5))
    assert telemetry.records()[0]["class"] == errors.TRANSIENT


def test_delegation_and_identity():
    inner = Scripted()
    wrapped = observe.observed(inner, None)  # no telemetry: calls still work
    assert (wrapped.name, wrapped.installation, wrapped.type_name) == ("eu-1", "inst", "scripted")
    assert wrapped.create(contract.CreateRequest(name="proxy-a", uid="u"), Deadline(5)) == "scripted/proxy-a"
    assert wrapped.id_for("proxy-b", contract.Placement()) == "scripted/proxy-b"
    wrapped.close()
    assert inner.closed


def test_check_on_a_non_checker():
    telemetry = observe.Telemetry()
    wrapped = observe.observed(Scripted(), telemetry)
    assert wrapped.checker is None
    assert wrapped.check(Deadline(5)) == []
    assert telemetry.records() == []


def test_check_on_a_checker_is_recorded():
    telemetry = observe.Telemetry()
    inner = ScriptedChecker()
    wrapped = observe.observed(inner, telemetry)
    assert wrapped.checker is inner
    (status,) = wrapped.check(Deadline(5))
    assert status.ready and status.target == "api"
    assert [(r["op"], r["provider"], r["class"]) for r in telemetry.records()] == [("check", "eu-1", "ok")]


def test_telemetry_records_are_a_copy():
    telemetry = observe.Telemetry()
    telemetry.record("get", "p", "ok", 0.5)
    telemetry.records().clear()
    assert len(telemetry.records()) == 1
