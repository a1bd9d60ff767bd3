"""The provider conformance suite: one test per MUST rule of the contract (blueprint §2, §5) and
per item of the §7.5 checklist, run by every provider against its own backend.

A provider's ``tests/contract/test_<type>.py`` subclasses ``ContractSuite`` (which pytest does
not collect by itself: its name does not start with ``Test``) and supplies a ``backend``
fixture implementing ``harness.Backend``. The suite talks to the provider only through the
contract, as the modules and the controller do; it reaches behind it only through the harness.
Every test deletes what it created, in ``finally``, so a failure never leaks an instance.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import ipaddress
import logging
import threading
import time
import uuid

import pytest
from fakes import not_found_server

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ProviderError

#: a Checker must answer an expired deadline well within this (a functional bound, not a benchmark)
CHECK_PROMPT_SECONDS = 5.0
#: how long "will not recover by itself" is watched for
NO_RECOVERY_WATCH_SECONDS = 1.0


def new_uid() -> str:
    return str(uuid.uuid4())


def dl(backend) -> Deadline:
    return Deadline(backend.timeout)


def cancelled() -> Deadline:
    deadline = Deadline(60)
    deadline.cancel()
    return deadline


@contextlib.contextmanager
def cleanup(backend):
    """Collects provider ids; deletes each at exit (even when the test failed). A failed
    cleanup fails a passing test, but never masks the failure of a failing one."""
    ids, problems = [], []
    try:
        yield ids
    finally:
        for provider_id in ids:
            try:
                backend.provider.delete(provider_id, dl(backend))
            except Exception as exc:  # report, but keep cleaning the others
                problems.append("%s: %s" % (provider_id, exc))
    assert not problems, "cleanup failed: %s" % problems


def wait_for_state(backend, provider_id: str, wanted: tuple) -> list:
    """Poll ``get`` until the state is one of ``wanted``; returns every instance seen."""
    seen = []
    end = time.monotonic() + backend.timeout
    while True:
        instance = backend.provider.get(provider_id, dl(backend))
        seen.append(instance)
        if instance.state in wanted:
            return seen
        if time.monotonic() > end:
            pytest.fail(
                "%s did not reach %s within %ss; states seen: %s"
                % (provider_id, wanted, backend.timeout, [i.state for i in seen])
            )
        time.sleep(0.1)


def wait_until_gone(backend, provider_id: str) -> None:
    end = time.monotonic() + backend.timeout
    while True:
        try:
            backend.provider.get(provider_id, dl(backend))
        except ProviderError as exc:
            if errors.class_of(exc) == errors.NOT_FOUND:
                return
            raise
        if time.monotonic() > end:
            pytest.fail("%s still exists %ss after delete" % (provider_id, backend.timeout))
        time.sleep(0.1)


def listed(backend, provider=None) -> list:
    return (provider or backend.provider).list_by_tag(dl(backend))


def assert_class(exc_info, expected: str) -> None:
    got = errors.class_of(exc_info.value)
    assert got == expected, "expected %s, got %s: %s" % (expected, got, exc_info.value)


def to_utc(value: datetime.datetime | None):
    if value is None:
        return None
    assert value.tzinfo is not None, "created_at must be timezone-aware, got %r" % (value,)
    return value.astimezone(datetime.UTC)


class ContractSuite:
    """Inherit, define a ``backend`` fixture, and every contract rule is tested."""

    # -- Create ------------------------------------------------------------------------------

    def test_repeat_create_returns_same_id_without_duplicate(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            first = backend.provider.create(req, dl(backend))
            ids.append(first)
            second = backend.provider.create(req, dl(backend))
            assert second == first
            ours = [i for i in listed(backend) if i.name == req.name]
            assert len(ours) == 1, "one name must be one instance, listed %d: %s" % (len(ours), ours)
            assert ours[0].id == first

    def test_concurrent_creates_of_one_name_make_one_instance(self, backend):
        req = backend.request(new_uid())
        results, failures = [], []

        def create():
            try:
                results.append(backend.provider.create(req, dl(backend)))
            except Exception as exc:  # collected: the assertion below names it
                failures.append(exc)

        with cleanup(backend) as ids:
            threads = [threading.Thread(target=create) for _worker in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(backend.timeout)
            ids.extend(sorted(set(results)))
            assert failures == []
            assert len(results) == 4 and len(set(results)) == 1
            assert len([i for i in listed(backend) if i.name == req.name]) == 1

    def test_create_marks_instance_for_gc(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            ids.append(backend.provider.create(req, dl(backend)))
            ours = [i for i in listed(backend) if i.id == ids[0]]
            assert len(ours) == 1, "a fresh instance must be listed by tag right away"
            assert ours[0].uid == req.uid
            assert ours[0].installation == backend.provider.installation

    def test_create_adopts_existing_instance_only_when_uid_matches(self, backend):
        owner = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(owner, dl(backend))
            ids.append(provider_id)
            before = backend.backend_record(provider_id)
            intruder = dataclasses.replace(backend.request(new_uid()), name=owner.name)
            assert intruder.uid != owner.uid
            with pytest.raises(ProviderError) as exc_info:
                backend.provider.create(intruder, dl(backend))
            assert_class(exc_info, errors.PERMANENT)
            # The existing instance is untouched: same owner, same creation time, still one.
            after = backend.backend_record(provider_id)
            assert after["uid"] == owner.uid
            assert to_utc(after["created_at"]) == to_utc(before["created_at"])
            assert backend.provider.get(provider_id, dl(backend)).uid == owner.uid
            assert len([i for i in listed(backend) if i.name == owner.name]) == 1
            # ... and its rightful owner still adopts it.
            assert backend.provider.create(owner, dl(backend)) == provider_id

    def test_create_never_adopts_an_unmarked_instance(self, backend):
        req = backend.request(new_uid())
        backend.create_unmarked(req.name)
        with pytest.raises(ProviderError) as exc_info:
            backend.provider.create(req, dl(backend))
        assert_class(exc_info, errors.PERMANENT)
        assert [i for i in listed(backend) if i.name == req.name] == []

    def test_cancelled_create_creates_nothing(self, backend):
        req = backend.request(new_uid())
        with pytest.raises(ProviderError) as exc_info:
            backend.provider.create(req, cancelled())
        assert_class(exc_info, errors.TRANSIENT)
        assert [i for i in listed(backend) if i.name == req.name] == []

    # -- Get ---------------------------------------------------------------------------------

    def test_get_after_delete_is_not_found(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            assert backend.provider.get(provider_id, dl(backend)).name == req.name
            backend.provider.delete(provider_id, dl(backend))
            wait_until_gone(backend, provider_id)
            with pytest.raises(ProviderError) as exc_info:
                backend.provider.get(provider_id, dl(backend))
            assert_class(exc_info, errors.NOT_FOUND)

    def test_cancelled_get_is_transient_never_not_found(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            with pytest.raises(ProviderError) as exc_info:
                backend.provider.get(provider_id, cancelled())
            # "Can't tell" must never read as "gone": that would create a duplicate.
            assert_class(exc_info, errors.TRANSIENT)

    def test_malformed_ids_are_permanent_for_get(self, backend):
        assert backend.malformed_ids, "the harness must list malformed ids"
        wrong = {}
        for provider_id in backend.malformed_ids:
            try:
                backend.provider.get(provider_id, dl(backend))
                wrong[repr(provider_id)] = "no error"
            except ProviderError as exc:
                if errors.class_of(exc) != errors.PERMANENT:
                    wrong[repr(provider_id)] = errors.class_of(exc)
        assert wrong == {}, "get must fail Permanent for every malformed id"

    def test_running_only_with_ip_and_reached_in_time(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            if backend.reaches_running:
                seen = wait_for_state(backend, provider_id, (contract.RUNNING,))
            else:
                seen = [backend.provider.get(provider_id, dl(backend))]
            for instance in seen + listed(backend):
                assert instance.state in contract.STATES
                if instance.state == contract.RUNNING:
                    assert instance.ip, "Running without an IP: %r" % (instance,)
                    ipaddress.ip_address(instance.ip)  # a real address, not a placeholder
            if backend.reaches_running:
                assert seen[-1].state == contract.RUNNING

    def test_unknown_backend_state_maps_to_stopped(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            if backend.reaches_running:
                wait_for_state(backend, provider_id, (contract.RUNNING,))
            backend.force_unknown_state(provider_id)
            instance = backend.provider.get(provider_id, dl(backend))
            assert instance.state == contract.STOPPED
            assert instance.ip == ""
            # Stopped means it will not recover by itself.
            time.sleep(NO_RECOVERY_WATCH_SECONDS)
            assert backend.provider.get(provider_id, dl(backend)).state == contract.STOPPED

    def test_uid_and_created_at_are_read_back_from_backend(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            before = datetime.datetime.now(datetime.UTC)
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            after = datetime.datetime.now(datetime.UTC)
            record = backend.backend_record(provider_id)
            assert record["uid"] == req.uid
            assert record["created_at"] is not None
            slack = datetime.timedelta(seconds=5)  # backend clocks may round
            assert before - slack <= to_utc(record["created_at"]) <= after + slack
            # A provider that shares no memory with the creator reads the same values.
            fresh = backend.another_provider()
            for provider in (backend.provider, fresh):
                instance = provider.get(provider_id, dl(backend))
                assert instance.uid == record["uid"]
                assert to_utc(instance.created_at) == to_utc(record["created_at"])
                assert instance.name == req.name

    def test_provider_id_is_self_contained(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            fresh = backend.another_provider()
            assert fresh.get(provider_id, dl(backend)).uid == req.uid
            fresh.delete(provider_id, dl(backend))
            wait_until_gone(backend, provider_id)

    # -- Delete ------------------------------------------------------------------------------

    def test_delete_twice_succeeds(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            backend.provider.delete(provider_id, dl(backend))
            backend.provider.delete(provider_id, dl(backend))
            wait_until_gone(backend, provider_id)
            backend.provider.delete(provider_id, dl(backend))

    def test_delete_removes_everything_create_made(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            if backend.reaches_running:
                wait_for_state(backend, provider_id, (contract.RUNNING,))
            assert backend.leftovers(provider_id), "the harness sees nothing of a live instance"
            backend.provider.delete(provider_id, dl(backend))
            wait_until_gone(backend, provider_id)
            end = time.monotonic() + backend.timeout
            while backend.leftovers(provider_id) and time.monotonic() < end:
                time.sleep(0.1)
            assert backend.leftovers(provider_id) == []

    def test_malformed_ids_are_permanent_for_delete(self, backend):
        wrong = {}
        for provider_id in backend.malformed_ids:
            try:
                backend.provider.delete(provider_id, dl(backend))
                wrong[repr(provider_id)] = "no error"
            except ProviderError as exc:
                if errors.class_of(exc) != errors.PERMANENT:
                    wrong[repr(provider_id)] = errors.class_of(exc)
        assert wrong == {}, "delete must fail Permanent for every malformed id"

    @pytest.mark.parametrize("body", sorted(not_found_server.BODIES))
    def test_not_found_only_with_proof(self, backend, body):
        """A backend that answers "not found" to everything, without saying that the instance
        asked for is gone (a wrong URL, an ingress in front of the API), must never make get,
        delete or list answer NotFound, nor delete succeed: a false NotFound creates duplicates,
        and a delete that "succeeds" releases a finalizer while the instance still runs."""
        req = backend.request(new_uid())
        with backend.unproven_backend(body) as provider:
            provider_id = provider.id_for(req.name, req.placement, req.namespace)
            assert provider_id, "the request's instance has an id without a backend call"
            wrong = {}
            for op, call in (
                ("get", lambda: provider.get(provider_id, Deadline(10))),
                ("delete", lambda: provider.delete(provider_id, Deadline(10))),
                ("list", lambda: provider.list_by_tag(Deadline(10))),
            ):
                try:
                    call()
                    wrong[op] = "succeeded"
                except ProviderError as exc:
                    if errors.class_of(exc) == errors.NOT_FOUND:
                        wrong[op] = str(exc)
            assert wrong == {}, "no proof, no NotFound (and no success): %s" % wrong

    def test_cancelled_delete_is_transient_and_keeps_instance(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            with pytest.raises(ProviderError) as exc_info:
                backend.provider.delete(provider_id, cancelled())
            assert_class(exc_info, errors.TRANSIENT)
            assert backend.provider.get(provider_id, dl(backend)).uid == req.uid

    def test_delete_never_removes_an_unmarked_instance(self, backend):
        """The provider itself refuses, not only ``proxy_instance``: GC, a playbook's id and a
        direct call all reach ``delete``."""
        req = backend.request(new_uid())
        backend.create_unmarked(req.name)
        provider_id = backend.provider.id_for(req.name, req.placement, req.namespace)
        assert provider_id, "the harness's request must let id_for name the instance"
        with pytest.raises(ProviderError) as exc_info:
            backend.provider.delete(provider_id, dl(backend))
        assert_class(exc_info, errors.PERMANENT)
        assert "not managed" in str(exc_info.value)
        assert backend.leftovers(provider_id), "the unmarked instance was deleted"

    def test_delete_never_removes_another_installations_instance(self, backend):
        req = backend.request(new_uid())
        other = backend.another_provider(installation="other-" + uuid.uuid4().hex[:8])
        provider_id = other.create(req, dl(backend))
        try:
            with pytest.raises(ProviderError) as exc_info:
                backend.provider.delete(provider_id, dl(backend))
            assert_class(exc_info, errors.PERMANENT)
            assert other.installation in str(exc_info.value)  # says whose it is
            assert other.get(provider_id, dl(backend)).uid == req.uid
        finally:
            other.delete(provider_id, dl(backend))

    # -- ListByTag ---------------------------------------------------------------------------

    def test_list_by_tag_excludes_unmarked_includes_ours(self, backend):
        req = backend.request(new_uid())
        unmarked = backend.request(new_uid()).name
        with cleanup(backend) as ids:
            before = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=5)
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            backend.create_unmarked(unmarked)
            instances = listed(backend)
            assert unmarked not in {i.name for i in instances}
            assert not any(unmarked in i.id for i in instances)
            ours = [i for i in instances if i.id == provider_id]
            assert len(ours) == 1
            assert ours[0].name == req.name
            assert ours[0].uid == req.uid
            assert ours[0].installation == backend.provider.installation
            assert ours[0].created_at is not None and to_utc(ours[0].created_at) >= before

    def test_list_by_tag_ids_are_accepted_by_delete(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            ids.append(backend.provider.create(req, dl(backend)))
            (ours,) = [i for i in listed(backend) if i.name == req.name]
            backend.provider.delete(ours.id, dl(backend))
            wait_until_gone(backend, ids[0])
            assert [i for i in listed(backend) if i.name == req.name] == []

    def test_list_by_tag_fails_rather_than_returning_partial_list(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            with backend.break_listing(), pytest.raises(ProviderError) as exc_info:
                backend.provider.list_by_tag(dl(backend))
            assert errors.class_of(exc_info.value) != errors.NOT_FOUND
            assert exc_info.value.op == "list"
            # Once the backend is readable again, the list is whole again.
            assert [i.id for i in listed(backend) if i.name == req.name] == [provider_id]

    def test_list_by_tag_excludes_other_installation(self, backend):
        req = backend.request(new_uid())
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            other = backend.another_provider(installation="other-" + uuid.uuid4().hex[:8])
            assert other.installation != backend.provider.installation
            assert provider_id not in {i.id for i in listed(backend, other)}
            assert provider_id in {i.id for i in listed(backend)}

    def test_cancelled_list_fails(self, backend):
        with pytest.raises(ProviderError) as exc_info:
            backend.provider.list_by_tag(cancelled())
        assert_class(exc_info, errors.TRANSIENT)

    # -- Secrets -----------------------------------------------------------------------------

    def test_cloud_init_sentinel_never_leaks(self, backend, caplog):
        sentinel = "SENTINEL-%s" % uuid.uuid4().hex
        cloud_init = "#cloud-config\nwrite_files:\n- content: %s\n  path: /etc/secret\n" % sentinel
        caplog.set_level(logging.DEBUG)  # the root logger: every logger propagates here
        for name in list(logging.root.manager.loggerDict):
            logger = logging.getLogger(name)
            if logger.level > logging.DEBUG:
                caplog.set_level(logging.DEBUG, logger=name)
        req = backend.request(new_uid(), cloud_init=cloud_init)
        raised = []
        outputs = []
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            backend.provider.create(req, dl(backend))
            if backend.reaches_running:
                wait_for_state(backend, provider_id, (contract.RUNNING,))
            listed(backend)
            intruder = dataclasses.replace(backend.request(new_uid(), cloud_init=cloud_init), name=req.name)
            with pytest.raises(ProviderError) as exc_info:
                backend.provider.create(intruder, dl(backend))
            raised.append(exc_info.value)
            with pytest.raises(ProviderError) as exc_info:
                backend.provider.create(req, cancelled())
            raised.append(exc_info.value)
            outputs.append(backend.captured_output())
            backend.provider.delete(provider_id, dl(backend))
        outputs.append(backend.captured_output())
        assert sentinel not in repr(req) and sentinel not in str(req.describe())
        for record in caplog.records:
            assert sentinel not in record.getMessage(), record.name
            assert sentinel not in str(record.args), record.name
        assert sentinel not in caplog.text
        for exc in raised:
            chain = [exc, *_causes(exc)]
            for item in chain:
                assert sentinel not in str(item) and sentinel not in repr(item)
        assert sentinel not in repr(backend.telemetry.records())
        for text in outputs:
            assert sentinel not in text

    # -- Checker -----------------------------------------------------------------------------

    def test_checker_never_raises_one_status_per_target_stable_order(self, backend):
        checker = checker_of(backend.provider)
        if checker is None:
            # Without Checker a provider shows up as unsupported, never as failed.
            assert backend.provider.check(dl(backend)) == []
            return
        first = checker.check(dl(backend))
        second = backend.provider.check(dl(backend))  # through the observing wrapper too
        assert first, "a Checker reports at least one target"
        for statuses in (first, second):
            assert all(isinstance(s, contract.TargetStatus) for s in statuses)
            targets = [s.target for s in statuses]
            assert len(targets) == len(set(targets)), "one status per target: %s" % targets
            for status in statuses:
                assert status.reason, status
                assert isinstance(status.ready, bool)
                if status.ready:
                    assert status.reason == contract.REASON_REACHABLE, status
        assert [s.target for s in first] == [s.target for s in second]

    def test_checker_returns_promptly_with_expired_deadline(self, backend):
        checker = checker_of(backend.provider)
        for deadline in (Deadline(0), cancelled()):
            start = time.monotonic()
            if checker is None:
                assert backend.provider.check(deadline) == []
                continue
            statuses = checker.check(deadline)
            took = time.monotonic() - start
            assert took < CHECK_PROMPT_SECONDS, "check took %.1fs with an expired deadline" % took
            assert statuses and all(isinstance(s, contract.TargetStatus) for s in statuses)
            reference = [s.target for s in checker.check(dl(backend))]
            assert [s.target for s in statuses] == reference

    # -- Errors ------------------------------------------------------------------------------

    def test_errors_carry_configured_provider_name(self, backend):
        provider = backend.provider
        assert provider.name != provider.type_name, "configure a name unlike the type to test this"
        req = backend.request(new_uid())
        caught = []
        for call in (
            lambda: provider.get(backend.malformed_ids[0], dl(backend)),
            lambda: provider.delete(backend.malformed_ids[0], dl(backend)),
            lambda: provider.create(req, cancelled()),
            lambda: provider.list_by_tag(cancelled()),
        ):
            with pytest.raises(ProviderError) as exc_info:
                call()
            caught.append(exc_info.value)
        for exc, op in zip(caught, ("get", "delete", "create", "list"), strict=True):
            assert exc.provider_name == provider.name
            assert exc.op == op
            assert provider.name in str(exc)
        outcomes = [(r["op"], r["provider"], r["class"]) for r in backend.telemetry.records()][-4:]
        assert outcomes == [
            ("get", provider.name, errors.PERMANENT),
            ("delete", provider.name, errors.PERMANENT),
            ("create", provider.name, errors.TRANSIENT),
            ("list", provider.name, errors.TRANSIENT),
        ]


def checker_of(provider):
    """The unwrapped Checker (blueprint §5), looked up like the modules do."""
    inner = getattr(provider, "checker", None)
    if inner is not None:
        return inner
    return provider if isinstance(provider, contract.Checker) else None


def _causes(exc: BaseException) -> list:
    out, seen = [], set()
    current = exc.__cause__ or exc.__context__
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out.append(current)
        current = current.__cause__ or current.__context__
    return out
