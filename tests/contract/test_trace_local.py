"""The local provider's trace, exported over OTLP/HTTP and decoded as a collector would
(trace_capture.py): under the module span, each operation's ``provider.<op>`` holds a span per
call into Squid's process: ``squid.start`` for the create, ``squid.probe`` for each get of a
running instance, ``squid.reconfigure`` for an auth change, ``squid.stop`` for the delete. The
cloud-init and the password (sentinels) appear in no exported byte."""

from __future__ import annotations

import pytest
from docs.trace_tree import assert_trace_as_drawn
from trace_capture import assert_no_secret, check_tree, children, exporting, render, secret_request

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth
from contract import local_fixtures
from contract.suite import cleanup, dl, wait_for_state

pytestmark = pytest.mark.squid
backend = local_fixtures.backend


def test_create_get_auth_delete_are_one_tree_of_squid_calls(backend):
    req, secrets = secret_request(backend)
    provider = backend.provider
    with exporting() as (receiver, _root), cleanup(backend) as ids:
        provider_id = provider.create(req, dl(backend))
        ids.append(provider_id)
        wait_for_state(backend, provider_id, (contract.RUNNING,))
        rotated = Auth("crawler", "New-" + req.auth.password)
        assert provider.sync_auth(provider_id, rotated, dl(backend)) is True
        provider.delete(provider_id, dl(backend))
        ids.remove(provider_id)
    spans = list(receiver.spans)
    print(render(spans))
    by_id = check_tree(spans)
    assert_trace_as_drawn("docs/local-provider.md", "squid.start", spans)  # the page's tree is this trace
    ops = {s.name: s for s in spans if s.name.startswith("provider.")}
    assert {"provider.create", "provider.get", "provider.sync_auth", "provider.delete"} <= set(ops)
    for op in ops.values():
        assert by_id[op.parent_id].name == "module.proxy_instance"

    def calls(op_name: str) -> set:
        return {c.name for op in spans if op.name == op_name for c in children(spans, op)}

    assert "squid.start" in calls("provider.create")
    assert "squid.probe" in calls("provider.get")
    assert "squid.reconfigure" in calls("provider.sync_auth")
    assert calls("provider.delete") == {"squid.stop"}
    start = next(s for s in spans if s.name == "squid.start")
    name = provider_id.rsplit("/", 1)[-1]
    assert start.attributes["local.instance"] == name and start.attributes["process.pid"] > 0
    assert start.attributes["duration_ms"] > 0 and start.status == ""
    probes = [s for s in spans if s.name == "squid.probe"]
    assert probes[-1].attributes["local.ready"] is True  # the last get saw it Running
    assert {p.attributes["server.port"] for p in probes} == {req.port}
    stop = next(s for s in spans if s.name == "squid.stop")
    assert stop.attributes["local.processes"] >= 1
    assert_no_secret(receiver, *secrets)
