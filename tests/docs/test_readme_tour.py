"""README.md's quick tour and docs/inventory.md's inventory sources, taken from the Markdown and
run for real: the README's providers file and playbook (three proxies through the local provider
and real Squid, proxy_info, a proxy_gc dry run), its inventory source and ``--graph`` command;
then each inventory source of docs/inventory.md over those proxies through ``ansible-inventory``,
and its playbook through ``ansible-playbook`` (every proxy's port answers).

Only what cannot be used as written on a test machine is rewritten: the providers file's path
(``/etc/egress-proxies/providers.yaml``) becomes a scratch file (and an inventory source that
names none gets it), and its ``stateDir`` and ``addressRange`` a scratch directory and a free
loopback range.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from contract.local_backend import random_loopback_range
from integration.local_env import instance_dirs, kill_squids
from integration.playbook import ansible_environ, run_playbook

from ansible_collections.crawl.egress_proxies.plugins.inventory.proxies import InventoryModule
from ansible_collections.crawl.egress_proxies.plugins.plugin_utils import proxy_hosts

from .markdown_blocks import blocks
from .output_shape import one_block

pytestmark = [pytest.mark.squid, pytest.mark.playbook]
ETC_FILE = "/etc/egress-proxies/providers.yaml"
BIN = os.path.dirname(sys.executable)
PLUGIN = "plugin: crawl.egress_proxies.proxies"
# A group line of ``ansible-inventory --graph``: tree prefix, group, and the doc's note after it.
_GROUP_LINE = re.compile(r"^(?P<tree>[ |-]*)@(?P<group>[\w]+):(?P<note>.*)$")


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


def _cli(argv: list, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=ansible_environ(PATH=BIN + os.pathsep + os.environ.get("PATH", "")),
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def tour(tmp_path_factory):
    """The README's providers file and playbook, run; yields the scratch dir, the providers
    file, the playbook's task results and the tour's blocks. Deletes what is left at the end."""
    work = tmp_path_factory.mktemp("i37-docs-tour")
    found = _tour()
    providers = yaml.safe_load(found["providers"].text)
    state_dir = work / "state"
    providers["providers"][0]["local"].update(stateDir=str(state_dir), addressRange=random_loopback_range())
    providers_file = work / "providers.yaml"
    providers_file.write_text(yaml.safe_dump(providers))
    plays = yaml.safe_load(found["playbook"].text.replace(ETC_FILE, str(providers_file)))
    try:
        defaults = plays[0]["module_defaults"]["group/crawl.egress_proxies.egress_proxies"]
        run = run_playbook(work, plays[0]["tasks"], module_defaults=defaults)
        yield {"dir": work, "providers_file": str(providers_file), "run": run, "blocks": found}
    finally:
        leftovers = instance_dirs(state_dir)
        if leftovers:
            run_playbook(
                work,
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


def test_the_readme_tour_runs_as_written(tour):
    run = tour["run"]
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

    source = tour["blocks"]["source"].text.replace(ETC_FILE, tour["providers_file"])
    (tour["dir"] / "egress.proxies.yml").write_text(source)
    graph = _cli(["bash", "-c", tour["blocks"]["graph"].text], tour["dir"])
    assert graph.returncode == 0, graph.stderr[-2000:]
    lines = graph.stdout.splitlines()
    for group in ("@proxies:", "@provider_local:", "@state_running:"):  # as the block's comment says
        assert any(line.endswith(group) for line in lines), graph.stdout
    _assert_groups_as_inventory_md_shows(lines)


def _assert_groups_as_inventory_md_shows(graph: list) -> None:
    """docs/inventory.md's group tree: the tour's ``--graph`` has its lines (same tree prefix,
    same group family) and no group of another family; the page's example names are the ones
    the plugin makes for a gcp instance of provider ``gcp-eu`` in zone ``europe-west1-b``."""
    block = one_block("docs/inventory.md", "@all:\n  |--@proxies:")
    shown = [_GROUP_LINE.match(line).groups() for line in block.text.splitlines() if line.strip()]
    real = [
        match.groups()[:2]
        for match in map(_GROUP_LINE.match, graph)
        if match and match.group("group") != "ungrouped"  # Ansible's own, always there
    ]
    families: dict = {tree: set() for tree, _group in real}
    for tree, group in real:
        families[tree].add(group.split("_")[0])
    for tree, group, _note in shown:
        family = group.split("_")[0]
        if family == "zone":  # the tour's local instances have none ("when it has one")
            continue
        assert family in families.get(tree, ()), "%s: no %r line in the real graph:\n%s" % (
            block.where,
            tree + "@" + group,
            "\n".join(graph),
        )
    documented = {group.split("_")[0] for _tree, group, _note in shown}
    assert set().union(*families.values()) <= documented, (families, documented)
    record = {"provider": "gcp-eu", "type": "gcp", "state": "Running", "zone": "europe-west1-b"}
    made = ["all", "proxies"] + [
        InventoryModule._group_name(*pair) for pair in proxy_hosts.group_keys(record)
    ]
    assert [group for _tree, group, _note in shown] == made, made


def _inventory_sources() -> list:
    """docs/inventory.md's inventory sources (YAML blocks of the plugin)."""
    return [b for b in blocks("docs/inventory.md") if b.language == "yaml" and PLUGIN in b.text]


@pytest.mark.parametrize("block", _inventory_sources(), ids=lambda b: b.where)
def test_each_inventory_source_of_the_inventory_doc_lists_the_tour_proxies(tour, block):
    assert tour["run"].rc == 0
    document = yaml.safe_load(block.text.replace(ETC_FILE, tour["providers_file"]))
    document.setdefault("providers_file", tour["providers_file"])
    path = tour["dir"] / ("%d.proxies.yml" % block.line)
    path.write_text(yaml.safe_dump(document))
    listed = _cli([os.path.join(BIN, "ansible-inventory"), "-i", str(path), "--list"], tour["dir"])
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "WARNING" not in listed.stderr, listed.stderr[-2000:]
    hostvars = json.loads(listed.stdout)["_meta"]["hostvars"]
    assert len(hostvars) == 3, sorted(hostvars)


def test_the_inventory_docs_playbook_reaches_every_proxy(tour):
    assert tour["run"].rc == 0
    (block,) = [
        b for b in blocks("docs/inventory.md") if b.text.startswith("- name: Every running proxy answers")
    ]
    (source,) = [b for b in _inventory_sources() if b.text.startswith("# inventory/egress.proxies.yml\n")]
    inventory = tour["dir"] / "inventory"
    inventory.mkdir(exist_ok=True)
    (inventory / "egress.proxies.yml").write_text(source.text.replace(ETC_FILE, tour["providers_file"]))
    (tour["dir"] / "my_checks.yml").write_text(block.text)
    (commands,) = [
        b for b in blocks("docs/inventory.md") if "ansible-playbook -i inventory/egress.proxies.yml" in b.text
    ]
    run = _cli(["bash", "-e", "-c", commands.text], tour["dir"])  # --graph, --list, then the playbook
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert "ok=1" in run.stdout and "failed=0" in run.stdout, run.stdout[-3000:]
