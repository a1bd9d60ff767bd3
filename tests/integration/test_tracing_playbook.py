"""Tracing from a real ``ansible-playbook`` run, as a playbook user sets it up: the standard
OTEL_* variables and a W3C ``TRACEPARENT``, spans received by a local OTLP/HTTP receiver.

One create and one delete on the local provider (real Squid) with a cloud-init sentinel: each
module run is a ``module.proxy_instance`` span, child of the given parent, and each provider
call a ``provider.<op>`` span, child of its module's span (batch items run on worker threads),
with a ``squid.*`` span per call into Squid's process under it.
Nothing received holds the sentinel or the credentials in the providers' config.
"""

from __future__ import annotations

import uuid

import pytest
from otlp_receiver import Receiver

from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
TRACE_ID = uuid.uuid4().hex
PARENT_ID = uuid.uuid4().hex[:16]


def _otel_env(endpoint: str, **more) -> dict:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "TRACEPARENT": "00-%s-%s-01" % (TRACE_ID, PARENT_ID),
    }
    env.update(more)
    return env


def test_module_and_provider_spans_reach_the_collector_as_children(tmp_path, local):
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    uid = str(uuid.uuid4())
    tasks = [
        {
            "name": "create",
            PI: {
                "provider": "local",
                "instances": [
                    {"uid": uid, "cloud_init": "#cloud-config\n# %s\n" % sentinel},
                    {"uid": uid + "-b", "cloud_init": "#cloud-config\n# %s\n" % sentinel},
                ],
            },
        },
        {
            "name": "delete",
            PI: {"provider": "local", "state": "absent", "instances": [{"uid": uid}, {"uid": uid + "-b"}]},
        },
        # A module run that fails (a provider not configured): its span says so, with no message.
        {"name": "unknown provider", PI: {"provider": "nope", "uid": uid}, "ignore_errors": True},
    ]
    with Receiver() as receiver:
        run = run_playbook(tmp_path, tasks, module_defaults=local, env=_otel_env(receiver.endpoint))
        assert run.rc == 0, run.stdout[-3000:]
        receiver.wait_for(
            lambda spans: len([s for s in spans if s.name == "module.proxy_instance"]) == 3,
            "both module spans",
        )
        spans = list(receiver.spans)
    modules = [s for s in spans if s.name == "module.proxy_instance"]
    assert {(m.trace_id, m.parent_id) for m in modules} == {(TRACE_ID, PARENT_ID)}
    assert {m.service for m in modules} == {"crawl.egress_proxies"}
    assert {m.attributes["ansible.module"] for m in modules} == {PI}
    calls = [s for s in spans if s.name.startswith("provider.")]
    # Every call the modules report in their telemetry is a span, child of its module's span.
    reported = [r["op"] for task in ("create", "delete") for r in run[task]["telemetry"]]
    assert sorted(s.name for s in calls) == sorted("provider.%s" % op for op in reported)
    assert {"provider.create", "provider.delete"} <= {s.name for s in calls}
    assert {s.parent_id for s in calls} <= {m.span_id for m in modules}
    assert {s.trace_id for s in calls} == {TRACE_ID}
    for call in calls:
        assert call.attributes["provider.name"] == "local"
        assert call.attributes["provider.type"] == "local"
    # Under the calls, one span per call into Squid's process (squid.start, squid.probe, ...).
    backend = [s for s in spans if s.parent_id in {c.span_id for c in calls}]
    assert {s.name for s in backend} >= {"squid.start", "squid.stop"}
    assert {s.name.split(".")[0] for s in backend} == {"squid"}
    assert len(spans) == len(modules) + len(calls) + len(backend)  # nothing else, nothing orphaned
    # Status: the failed run is an error (its class, never its message); a get answering
    # NotFound (before the create) is an answer, not an error; the others are unset.
    assert sorted(m.status for m in modules) == ["", "", "error: failed"]
    assert {s.status for s in calls} == {""}
    assert any(s.attributes.get("provider.error_class") == "not_found" for s in calls)
    for body in receiver.bodies:
        assert sentinel.encode() not in body
        assert b"cloud-config" not in body


def test_nothing_is_sent_when_the_sdk_is_disabled(tmp_path, local):
    uid = str(uuid.uuid4())
    tasks = [
        {"name": "create", PI: {"provider": "local", "uid": uid}},
        {"name": "delete", PI: {"provider": "local", "uid": uid, "state": "absent"}},
    ]
    with Receiver() as receiver:
        env = _otel_env(receiver.endpoint, OTEL_SDK_DISABLED="true")
        run = run_playbook(tmp_path, tasks, module_defaults=local, env=env)
        assert run.rc == 0, run.stdout[-3000:]
        # The receiver got nothing: each module process has exited (its spans are flushed
        # before exit when it exports), so nothing can arrive later.
        assert receiver.spans == [] and receiver.bodies == []


def test_debug_log_lines_name_the_exported_span_they_were_written_in(tmp_path, local):
    """At -vvv each module returns ``debug_log``: a line written inside a span carries its trace
    and span ids, which are those of a span the receiver got (the provider call's)."""
    uid = str(uuid.uuid4())
    tasks = [
        {"name": "create", PI: {"provider": "local", "uid": uid}},
        {"name": "delete", PI: {"provider": "local", "uid": uid, "state": "absent"}},
    ]
    with Receiver() as receiver:
        run = run_playbook(
            tmp_path, tasks, module_defaults=local, env=_otel_env(receiver.endpoint), verbosity=3
        )
        assert run.rc == 0, run.stdout[-3000:]
        receiver.wait_for(
            lambda spans: len([s for s in spans if s.name == "module.proxy_instance"]) == 2,
            "both module spans",
        )
        spans = {s.span_id: s for s in receiver.spans}
    lines = run["create"]["debug_log"] + run["delete"]["debug_log"]
    started = [line for line in lines if "started squid pid=" in line]
    removed = [line for line in lines if "op=delete" in line and "removed" in line]
    assert started and removed, lines
    for line in started + removed:
        fields = dict(part.split("=", 1) for part in line.split()[1:3])
        assert fields["trace_id"] == TRACE_ID, line
        assert spans[fields["span_id"]].name in ("provider.create", "provider.delete"), line
    for line in lines:
        if "trace_id=" in line:
            fields = dict(part.split("=", 1) for part in line.split()[1:3])
            assert fields["span_id"] in spans, "a line names a span nobody received: %s" % line
