"""``proxy_gc`` finishes a sweep larger than one deadline (issue 15), on real Squid processes.

Each local delete stops a Squid (about a second or two). With one deadline for the whole sweep
the later orphans were left undeleted while the task succeeded; each delete now has its own
deadline and they run concurrently, so every orphan goes, and a sweep that leaves some behind
fails with ``incomplete`` and ``remaining``.
"""

from __future__ import annotations

import uuid

import pytest

from .local_env import instance_dirs, squid_pids
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
GC = "crawl.egress_proxies.proxy_gc"


def test_gc_deletes_every_orphan_even_when_the_sweep_outlasts_one_timeout(tmp_path, local):
    uids = ["orphan-%d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(6)]
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "create",
                PI: {"provider": "local", "wait": True, "instances": [{"uid": u} for u in uids]},
            }
        ],
        module_defaults=local,
    )
    assert run.rc == 0, run.stdout[-3000:]
    run = run_playbook(
        tmp_path,
        [{"name": "gc", GC: {"live_uids": [], "min_age": "0", "timeout": 3, "concurrency": 6}}],
        module_defaults=local,
    )
    assert run.rc == 0, run["gc"].get("msg")
    gc = run["gc"]
    assert sorted(d["uid"] for d in gc["deleted"]) == sorted(uids)
    assert gc["remaining"] == [] and gc["incomplete"] is False and gc["errors"] == []
    assert instance_dirs(tmp_path / "state") == []
    assert squid_pids(tmp_path / "state") == []
