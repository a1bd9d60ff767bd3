"""``state: absent`` of an id whose provider can never resolve it again (issue 14, module side).

A kvm2 instance on a host that has left the providers file: ``get`` is Permanent (no such host),
``delete`` succeeds (nothing configured can reach it), and ``get`` after it is Permanent again.
The module must report the instance gone, not fail Permanent, or the controller can never
finish deleting that Proxy; it says why (reason HostNotConfigured, a warning naming the host).
Nothing is dialled: the only configured host is never reached.
"""

from __future__ import annotations

import pytest

from .playbook import run_playbook

pytestmark = [pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"


def _defaults(tmp_path) -> dict:
    block = {
        "sshKeyFile": str(tmp_path / "never-read"),
        "insecureIgnoreHostKey": True,
        "machineTypes": {"tiny": {"vcpus": 1, "memoryMiB": 128}},
        "hosts": [{"name": "still-here", "address": "127.0.0.1:9"}],
    }
    return {"providers": [{"name": "hv", "type": "kvm2", "kvm2": block}], "installation": "released"}


def test_absent_of_an_id_on_a_removed_host_reports_it_gone(tmp_path):
    gone = "hosts/left-the-config/domains/proxy-abcdefghijklmnop"
    tasks = [
        {"name": "single", PI: {"provider": "hv", "id": gone, "state": "absent"}},
        {
            "name": "batch",
            PI: {"provider": "hv", "state": "absent", "instances": [{"id": gone, "uid": "u1"}]},
        },
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=_defaults(tmp_path))
    assert run.rc == 0, run.stdout[-3000:]
    single = run["single"]
    assert single["instance"]["state"] == "absent" and single["instance"]["id"] == gone
    assert single["changed"] is True  # delete was called and succeeded
    assert [r["op"] for r in single["telemetry"]] == ["get", "delete", "get"]
    assert single["instance"]["reason"] == "HostNotConfigured"  # released, not proven deleted
    (item,) = run["batch"]["results"]
    assert item["failed"] is False and item["state"] == "absent" and item["reason"] == "HostNotConfigured"
    assert "left-the-config" in run.stdout and "proxy_gc" in run.stdout  # the warning
