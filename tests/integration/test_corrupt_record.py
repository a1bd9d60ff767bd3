"""A corrupt ``instance.json`` under a running Squid is reported, never silently left out
(issue 28 §7): ``proxy_info`` and ``proxy_gc`` give an ``errors`` entry naming the instance and
warn, and the inventory plugin warns, through real runs (real Squid)."""

from __future__ import annotations

import pytest

from . import inventory_cli as cli
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
INFO = "crawl.egress_proxies.proxy_info"
GC = "crawl.egress_proxies.proxy_gc"


def test_a_corrupt_record_is_reported_by_info_gc_and_the_inventory(tmp_path, local):
    made = run_playbook(
        tmp_path, [{"name": "make", PI: {"provider": "local", "uid": "corrupt-1"}}], module_defaults=local
    )
    assert made.rc == 0, made.stdout[-3000:]
    name = made["make"]["instance"]["name"]
    record = tmp_path / "state" / "instances" / name / "instance.json"
    saved = record.read_bytes()
    record.write_text("{not json")
    try:
        run = run_playbook(
            tmp_path,
            [
                {"name": "info", INFO: {}},
                {"name": "gc", GC: {"live_uids": [], "min_age": "0"}, "check_mode": True},
            ],
            module_defaults=local,
        )
        assert run.rc == 0, run.stdout[-3000:]
        for task in ("info", "gc"):
            entries = [e for e in run[task]["errors"] if e["id"] == "local/" + name]
            assert entries, run[task]
            assert "left out of the list" in entries[0]["msg"] and entries[0]["provider"] == "local"
            assert any(name in w for w in run[task].get("warnings", [])), run[task]
        providers = cli.write_providers(
            tmp_path, {"providers": local["providers"], "installation": local["installation"]}
        )
        listed = cli.run(
            "ansible-inventory", "-i", cli.write_source(tmp_path, providers_file=providers), "--list"
        )
        assert listed.rc == 0, listed.stderr
        assert name in listed.stderr and "left out of the list" in listed.stderr
    finally:
        record.write_bytes(saved)  # so the fixture deletes it (and its Squid) by id
