"""README.md's quick tour, taken from the Markdown and run for real: the providers file, the
playbook (three proxies through the local provider and real Squid, proxy_info, a proxy_gc dry
run), the inventory source and its ``ansible-inventory --graph`` command.

Only what cannot be used as written on a test machine is rewritten: the providers file's path
(``/etc/egress-proxies/providers.yaml``) becomes a scratch file, and its ``stateDir`` and
``addressRange`` a scratch directory and a free loopback range.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml
from contract.local_backend import random_loopback_range
from integration.local_env import instance_dirs, kill_squids
from integration.playbook import ansible_environ, run_playbook

from .markdown_blocks import blocks

pytestmark = [pytest.mark.squid, pytest.mark.playbook]
ETC_FILE = "/etc/egress-proxies/providers.yaml"
BIN = os.path.dirname(sys.executable)


def _tour() -> dict:
    """The tour's blocks by what they are (each must be there exactly once)."""
    found = {}
    for block in blocks("README.md"):
        if block.text.startswith("# " + ETC_FILE):
            found["providers"] = block
        elif "crawl.egress_proxies.proxy_instance:" in block.text and block.text.startswith("- hosts:"):
            found["playbook"] = block
        elif block.text.startswith("# egress.proxies.yml"):
            found["source"] = block
        elif block.language == "sh" and "ansible-inventory -i egress.proxies.yml" in block.text:
            found["graph"] = block
    assert sorted(found) == ["graph", "playbook", "providers", "source"], sorted(found)
    return found


def test_the_readme_tour_runs_as_written(tmp_path):
    tour = _tour()
    providers = yaml.safe_load(tour["providers"].text)
    state_dir = tmp_path / "state"
    providers["providers"][0]["local"].update(stateDir=str(state_dir), addressRange=random_loopback_range())
    providers_file = tmp_path / "providers.yaml"
    providers_file.write_text(yaml.safe_dump(providers))
    plays = yaml.safe_load(tour["playbook"].text.replace(ETC_FILE, str(providers_file)))
    try:
        defaults = plays[0]["module_defaults"]["group/crawl.egress_proxies.egress_proxies"]
        run = run_playbook(tmp_path, plays[0]["tasks"], module_defaults=defaults)
        assert run.rc == 0, run.stdout[-3000:]
        fleet = run["Three proxies, waiting until each serves"]
        assert sorted(r["uid"] for r in fleet["results"]) == ["team-a-1", "team-a-2", "team-b-1"]
        assert {r["state"] for r in fleet["results"]} == {"Running"}
        assert len(run["What is out there"]["instances"]) == 3
        gc = run["Collect what no longer belongs to anyone (dry run first)"]
        # team-b-1 is not live, but younger than min_age (10m): kept, as the README says
        assert gc["would_delete"] == []
        assert [(i["uid"], i["reason"]) for i in gc["kept"] if i["uid"] == "team-b-1"] == [
            ("team-b-1", "younger-than-min-age")
        ]

        (tmp_path / "egress.proxies.yml").write_text(
            tour["source"].text.replace(ETC_FILE, str(providers_file))
        )
        graph = subprocess.run(
            ["bash", "-c", tour["graph"].text],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=ansible_environ(PATH=BIN + os.pathsep + os.environ.get("PATH", "")),
            timeout=300,
            check=False,
        )
        assert graph.returncode == 0, graph.stderr[-2000:]
        lines = graph.stdout.splitlines()
        for group in ("@proxies:", "@provider_local:", "@state_running:"):  # as the block's comment says
            assert any(line.endswith(group) for line in lines), graph.stdout
    finally:
        leftovers = instance_dirs(state_dir)
        if leftovers:
            run_playbook(
                tmp_path,
                [
                    {
                        "crawl.egress_proxies.proxy_instance": {
                            "provider": "local",
                            "state": "absent",
                            "instances": [{"id": "local/%s" % name} for name in leftovers],
                        }
                    }
                ],
                module_defaults={"providers_file": str(providers_file)},
            )
    assert instance_dirs(state_dir) == [], "instances left behind"
    assert kill_squids(state_dir) == [], "Squid processes left behind (killed by pid)"
