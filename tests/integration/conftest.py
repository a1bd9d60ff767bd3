"""Fixtures of the module tests: a throwaway local provider, cleaned up by its own ids."""

from __future__ import annotations

import uuid

import pytest
from contract.local_backend import random_loopback_range

from .local_env import instance_dirs, kill_squids
from .playbook import run_playbook

PI = "crawl.egress_proxies.proxy_instance"


@pytest.fixture
def local(tmp_path):
    """Module defaults for a throwaway local provider; deletes whatever is left at teardown, and
    fails (after killing them by pid) when Squid processes of its state directory survive."""
    state_dir = tmp_path / "state"
    defaults = {
        "providers": [
            {
                "name": "local",
                "type": "local",
                "local": {"stateDir": str(state_dir), "addressRange": random_loopback_range()},
            }
        ],
        "installation": "it-%s" % uuid.uuid4().hex[:8],
    }
    yield defaults
    leftovers = instance_dirs(state_dir)
    if leftovers:
        run_playbook(
            tmp_path,
            [
                {
                    "name": "cleanup",
                    PI: {
                        "provider": "local",
                        "state": "absent",
                        "instances": [{"id": "local/%s" % name} for name in leftovers],
                    },
                }
            ],
            module_defaults=defaults,
        )
    assert instance_dirs(state_dir) == [], "instances left behind"
    assert kill_squids(state_dir) == [], "Squid processes left behind (killed by pid)"
