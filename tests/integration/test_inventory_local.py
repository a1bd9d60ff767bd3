"""The inventory plugin through real ``ansible-inventory`` and ``ansible-playbook`` runs, on the
local provider with real Squid proxies created through the modules first.

What a user relies on: every managed instance is a host named by its instance name with the
same fields ``proxy_info`` returns, in the groups the documentation names; ``providers``,
``installation`` and the environment variable select what is listed; ``compose``, ``groups``
and ``keyed_groups`` work as in the standard plugins; the cache answers without the providers;
a playbook can target a group and reach each proxy through its ``ansible_host``; ``hostnames``
names the hosts by the first preference that yields a name, and two instances wanting one name
both stay in the inventory (or the source fails with ``strict``), never one silently replacing
the other.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from contract.local_backend import random_loopback_range

from . import inventory_cli as cli
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
INFO = "crawl.egress_proxies.proxy_info"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Two local providers, two Running proxies on loc-a and one on loc-b (created and, at the
    end, deleted through the modules); ``instances`` is what proxy_info returns for them."""
    work = tmp_path_factory.mktemp("inventory-local")
    installation = "inv-%s" % uuid.uuid4().hex[:8]
    providers_file = cli.write_providers(
        work,
        {
            "installation": installation,
            "providers": [
                {
                    "name": name,
                    "type": "local",
                    "local": {"stateDir": str(work / name), "addressRange": random_loopback_range()},
                }
                for name in ("loc-a", "loc-b")
            ],
        },
    )
    defaults = {"providers_file": providers_file}
    items = {"loc-a": ["team-a-1", "team-a-2"], "loc-b": ["team-b-1"]}
    tasks = [
        {
            "name": p,
            PI: {"provider": p, "wait": True, "wait_timeout": 60, "instances": [{"uid": u} for u in uids]},
        }
        for p, uids in items.items()
    ] + [{"name": "info", INFO: {}}]
    run = run_playbook(work, tasks, module_defaults=defaults)
    assert run.rc == 0, run.stdout[-3000:]
    instances = {i["name"]: i for i in run["info"]["instances"]}
    assert len(instances) == 3 and {i["state"] for i in instances.values()} == {"Running"}
    try:
        yield {
            "dir": work,
            "providers_file": providers_file,
            "installation": installation,
            "instances": instances,
        }
    finally:
        delete = [
            {"name": p, PI: {"provider": p, "state": "absent", "instances": [{"uid": u} for u in uids]}}
            for p, uids in items.items()
        ]
        done = run_playbook(work, delete, module_defaults=defaults)
        assert done.rc == 0, done.stdout[-3000:]
        for name in items:
            left = work / name / "instances"
            assert not left.exists() or [p for p in left.iterdir() if not p.name.startswith(".")] == []


def by_provider(fleet, provider: str) -> list:
    return sorted(n for n, i in fleet["instances"].items() if i["provider"] == provider)


def test_list_every_instance_as_a_host_with_proxy_info_fields(fleet, tmp_path):
    source = cli.write_source(tmp_path, providers_file=fleet["providers_file"])
    run = cli.inventory(source)
    assert run.rc == 0, run.stderr
    assert "WARNING" not in run.stderr, run.stderr
    hostvars = run.hostvars
    assert sorted(hostvars) == sorted(fleet["instances"])
    for name, info in fleet["instances"].items():
        facts = hostvars[name]["egress_proxies"]
        assert set(facts) == set(info) | {"type", "port", "zone"}
        assert {k: facts[k] for k in info} == info  # the very fields proxy_info returns
        assert facts["type"] == "local" and facts["port"] == 3128 and facts["zone"] == ""
        assert facts["installation"] == fleet["installation"]
        assert hostvars[name]["ansible_host"] == info["ip"]
    assert run.hosts_of("provider_loc_a") == by_provider(fleet, "loc-a")
    assert run.hosts_of("provider_loc_b") == by_provider(fleet, "loc-b")
    assert run.hosts_of("type_local") == sorted(fleet["instances"])
    assert run.hosts_of("state_running") == sorted(fleet["instances"])
    assert sorted(run.data["proxies"]["children"]) == [
        "provider_loc_a",
        "provider_loc_b",
        "state_running",
        "type_local",
    ]
    assert not [g for g in run.data if g.startswith("zone_")]


def test_graph_shows_the_groups_under_proxies(fleet, tmp_path):
    source = cli.write_source(tmp_path, providers_file=fleet["providers_file"])
    run = cli.inventory(source, "--graph")
    assert run.rc == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "  |--@proxies:" in lines
    start = lines.index("  |  |--@provider_loc_b:")
    assert lines[start + 1 : start + 2] == ["  |  |  |--%s" % by_provider(fleet, "loc-b")[0]]


def test_graph_shows_groups_and_hosts_sorted(fleet, tmp_path):
    """Issue 37: ``--graph`` showed hosts and groups in the providers' listing order."""
    source = cli.write_source(tmp_path, providers_file=fleet["providers_file"])
    run = cli.inventory(source, "--graph")
    assert run.rc == 0, run.stderr
    lines = run.stdout.splitlines()
    start = lines.index("  |--@proxies:")
    children = [line[len("  |  |--@") : -1] for line in lines[start + 1 :] if line.startswith("  |  |--@")]
    assert children == sorted(children) and len(children) == 4, run.stdout
    group_hosts = [line[len("  |  |  |--") :] for line in lines[lines.index("  |  |--@state_running:") + 1 :]]
    running = group_hosts[: len(fleet["instances"])]
    assert running == sorted(fleet["instances"]), run.stdout


def test_providers_selects_a_subset_and_an_unknown_name_fails(fleet, tmp_path):
    source = cli.write_source(tmp_path, providers_file=fleet["providers_file"], providers=["loc-b"])
    run = cli.inventory(source)
    assert run.rc == 0, run.stderr
    assert sorted(run.hostvars) == by_provider(fleet, "loc-b")
    assert "provider_loc_a" not in run.data

    bad = cli.write_source(
        tmp_path, "bad.proxies.yml", providers_file=fleet["providers_file"], providers=["nope"]
    )
    run = cli.inventory(bad)
    assert run.rc != 0
    assert "provider 'nope' is not configured (configured: loc-a, loc-b)" in run.stderr


def test_providers_file_from_the_environment_and_installation_override(fleet, tmp_path):
    source = cli.write_source(tmp_path)
    env = {"EGRESS_PROXIES_PROVIDERS_FILE": fleet["providers_file"]}
    run = cli.inventory(source, env=env)
    assert run.rc == 0, run.stderr
    assert sorted(run.hostvars) == sorted(fleet["instances"])

    other = cli.write_source(tmp_path, "other.proxies.yml", installation="someone-else")
    run = cli.inventory(other, env=env)
    assert run.rc == 0, run.stderr
    assert run.hostvars == {}  # another installation's view of the same backends

    run = cli.inventory(source)
    assert run.rc != 0
    assert (
        "providers_file: required (or the EGRESS_PROXIES_PROVIDERS_FILE environment variable)" in run.stderr
    )


def test_compose_groups_and_keyed_groups(fleet, tmp_path):
    source = cli.write_source(
        tmp_path,
        providers_file=fleet["providers_file"],
        compose={"proxy_url": "'http://' ~ egress_proxies.ip ~ ':' ~ egress_proxies.port"},
        groups={"team_b": "egress_proxies.uid.startswith('team-b')"},
        keyed_groups=[{"key": "egress_proxies.installation", "prefix": "installation"}],
    )
    run = cli.inventory(source)
    assert run.rc == 0, run.stderr
    for name, info in fleet["instances"].items():
        assert run.hostvars[name]["proxy_url"] == "http://%s:3128" % info["ip"]
    assert run.hosts_of("team_b") == by_provider(fleet, "loc-b")
    keyed = "installation_" + fleet["installation"].replace("-", "_")
    assert run.hosts_of(keyed) == sorted(fleet["instances"])


def test_strict_fails_on_a_bad_compose_expression(fleet, tmp_path):
    options = {"providers_file": fleet["providers_file"], "compose": {"bad": "egress_proxies.nosuchfield.x"}}
    lenient = cli.inventory(cli.write_source(tmp_path, **options))
    assert lenient.rc == 0, lenient.stderr
    assert all("bad" not in hv for hv in lenient.hostvars.values())
    strict = cli.inventory(cli.write_source(tmp_path, "strict.proxies.yml", strict=True, **options))
    assert strict.rc != 0
    assert "Could not set bad for host" in strict.stderr


def test_cache_answers_without_the_providers(fleet, tmp_path):
    cache_dir = tmp_path / "cache"
    providers_file = str(tmp_path / "providers.yaml")
    with (
        open(fleet["providers_file"], encoding="utf-8") as src,
        open(providers_file, "w", encoding="utf-8") as dst,
    ):
        dst.write(src.read())
    source = cli.write_source(
        tmp_path,
        providers_file=providers_file,
        cache=True,
        cache_plugin="ansible.builtin.jsonfile",
        cache_connection=str(cache_dir),
        cache_timeout=3600,
    )
    first = cli.inventory(source)
    assert first.rc == 0, first.stderr
    assert sorted(first.hostvars) == sorted(fleet["instances"])
    (cached,) = os.listdir(cache_dir)
    with open(cache_dir / cached, encoding="utf-8") as handle:
        stored = json.loads(json.load(handle)["__payload__"])  # the jsonfile plugin's envelope
    assert sorted(h["name"] for h in stored["hosts"]) == sorted(fleet["instances"])
    assert stored["errors"] == []

    os.remove(providers_file)  # a fresh listing would now fail
    second = cli.inventory(source)
    assert second.rc == 0, second.stderr
    assert second.hostvars == first.hostvars
    flushed = cli.inventory(source, "--list", "--flush-cache")
    assert flushed.rc != 0
    assert "cannot read providers file" in flushed.stderr


def test_a_playbook_targets_a_provider_group_and_reaches_each_proxy(fleet, tmp_path):
    source = cli.write_source(tmp_path, providers_file=fleet["providers_file"])
    playbook = tmp_path / "reach.yml"
    playbook.write_text(
        """
- name: Every proxy of loc-a
  hosts: provider_loc_a
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Its host variables
      ansible.builtin.assert:
        that:
          - egress_proxies.provider == 'loc-a'
          - egress_proxies.state == 'Running'
          - ansible_host == egress_proxies.ip
          - inventory_hostname == egress_proxies.name
    - name: Its proxy port answers
      ansible.builtin.wait_for:
        host: "{{ ansible_host }}"
        port: "{{ egress_proxies.port }}"
        timeout: 10
    - name: Say who answered
      ansible.builtin.debug:
        msg: "reached {{ inventory_hostname }} at {{ ansible_host }}:{{ egress_proxies.port }}"
"""
    )
    run = cli.run("ansible-playbook", "-i", source, str(playbook))
    assert run.rc == 0, run.stdout[-3000:] + run.stderr[-2000:]
    for name in by_provider(fleet, "loc-a"):
        ip = fleet["instances"][name]["ip"]
        assert "reached %s at %s:3128" % (name, ip) in run.stdout
    assert by_provider(fleet, "loc-b")[0] not in run.stdout


def test_hostnames_the_first_preference_with_a_value_names_each_host(fleet, tmp_path):
    """Fields, and a template after one that yields nothing for local instances (no zone): each host
    is named by the first non-empty one, with the same variables and groups, and no warning."""
    by_uid = {i["uid"]: name for name, i in fleet["instances"].items()}
    cases = {
        "ip": (["ip", "name"], lambda i: i["ip"]),
        "id": (["id"], lambda i: i["id"]),
        "template after an empty one": (
            ["{{ egress_proxies.zone }}", "{{ egress_proxies.provider }}.{{ egress_proxies.uid }}", "name"],
            lambda i: "%s.%s" % (i["provider"], i["uid"]),
        ),
    }
    for label, (hostnames, expected) in cases.items():
        source = cli.write_source(
            tmp_path,
            "%s.proxies.yml" % label.replace(" ", "-"),
            providers_file=fleet["providers_file"],
            hostnames=hostnames,
        )
        run = cli.inventory(source)
        assert run.rc == 0, (label, run.stderr)
        assert "WARNING" not in run.stderr, (label, run.stderr)
        want = {expected(i): i for i in fleet["instances"].values()}
        assert sorted(run.hostvars) == sorted(want), label
        for host, info in want.items():
            assert run.hostvars[host]["egress_proxies"]["name"] == info["name"], label
            assert run.hostvars[host]["ansible_host"] == info["ip"], label
        assert run.hosts_of("provider_loc_b") == [expected(fleet["instances"][by_uid["team-b-1"]])], label


def test_hostnames_without_a_value_or_with_a_failing_template_fall_back_with_a_warning(fleet, tmp_path):
    names = sorted(fleet["instances"])
    nothing = cli.write_source(
        tmp_path, providers_file=fleet["providers_file"], hostnames=["{{ egress_proxies.zone }}"]
    )
    run = cli.inventory(nothing)
    assert run.rc == 0, run.stderr
    assert sorted(run.hostvars) == names  # named by the instance name, the last preference
    for name, info in fleet["instances"].items():
        assert (
            "%s's instance %s: no entry of hostnames yields a name" % (info["provider"], name) in run.stderr
        )

    options = {"providers_file": fleet["providers_file"], "hostnames": ["{{ egress_proxies.nosuch }}", "uid"]}
    lenient = cli.inventory(cli.write_source(tmp_path, "failing.proxies.yml", **options))
    assert lenient.rc == 0, lenient.stderr
    assert sorted(lenient.hostvars) == sorted(i["uid"] for i in fleet["instances"].values())
    assert "hostnames[0]: '{{ egress_proxies.nosuch }}' failed for loc-a's instance" in lenient.stderr
    strict = cli.inventory(cli.write_source(tmp_path, "strict.proxies.yml", strict=True, **options))
    assert strict.rc != 0
    # the first instance in host order (sorted by name) fails the source, whichever provider's
    assert "hostnames[0]: '{{ egress_proxies.nosuch }}' failed for loc-" in strict.stderr


def test_hostnames_a_name_already_taken_moves_the_instance_to_its_next_preference(fleet, tmp_path):
    """Every instance of a provider wants the provider's name: the first gets it, each other one
    its next preference, with a warning naming both; with strict the source fails."""
    options = {
        "providers_file": fleet["providers_file"],
        "hostnames": ["{{ egress_proxies.provider }}", "uid"],
    }
    run = cli.inventory(cli.write_source(tmp_path, **options))
    assert run.rc == 0, run.stderr
    first, second = by_provider(fleet, "loc-a")
    (only_b,) = by_provider(fleet, "loc-b")
    second_uid = fleet["instances"][second]["uid"]
    assert sorted(run.hostvars) == sorted(["loc-a", "loc-b", second_uid])  # all three instances
    assert run.hostvars["loc-a"]["egress_proxies"]["name"] == first
    assert run.hostvars[second_uid]["egress_proxies"]["name"] == second
    assert run.hostvars["loc-b"]["egress_proxies"]["name"] == only_b
    taken = "loc-a's instance %s: host name 'loc-a' (from hostnames[0]) is already loc-a's instance %s" % (
        second,
        first,
    )
    assert taken + "; named %r (from hostnames[1])" % second_uid in run.stderr
    strict = cli.inventory(cli.write_source(tmp_path, "strict.proxies.yml", strict=True, **options))
    assert strict.rc != 0
    assert taken in strict.stderr


def test_one_instance_name_on_two_providers_keeps_the_first(fleet, tmp_path):
    defaults = {"providers_file": fleet["providers_file"]}
    twin = {"provider": "loc-b", "uid": "team-a-1", "wait": True, "wait_timeout": 60}
    run = run_playbook(tmp_path, [{"name": "twin", PI: twin}], module_defaults=defaults)
    assert run.rc == 0, run.stdout[-3000:]
    name = run["twin"]["instance"]["name"]
    try:
        assert fleet["instances"][name]["provider"] == "loc-a"  # the same uid, hence the same name
        lenient = cli.inventory(cli.write_source(tmp_path, providers_file=fleet["providers_file"]))
        assert lenient.rc == 0, lenient.stderr
        assert lenient.hostvars[name]["egress_proxies"]["provider"] == "loc-a"
        assert name not in lenient.hosts_of("provider_loc_b")
        taken = "loc-b's instance %s: host name %r (from hostnames[0]) is already loc-a's instance %s" % (
            name,
            name,
            name,
        )
        assert taken + "; left out: no other entry of hostnames names it" in lenient.stderr
        strict = cli.inventory(
            cli.write_source(
                tmp_path, "strict.proxies.yml", providers_file=fleet["providers_file"], strict=True
            )
        )
        assert strict.rc != 0
        assert taken in strict.stderr
        # a second preference that tells the two apart keeps both
        both = cli.inventory(
            cli.write_source(
                tmp_path,
                "both.proxies.yml",
                providers_file=fleet["providers_file"],
                hostnames=["name", "{{ egress_proxies.provider }}/{{ egress_proxies.name }}"],
            )
        )
        assert both.rc == 0, both.stderr
        assert both.hostvars[name]["egress_proxies"]["provider"] == "loc-a"
        assert both.hostvars["loc-b/" + name]["egress_proxies"]["provider"] == "loc-b"
        assert both.hosts_of("provider_loc_b") == sorted(["loc-b/" + name, by_provider(fleet, "loc-b")[0]])
        assert taken + "; named %r (from hostnames[1])" % ("loc-b/" + name) in both.stderr
    finally:
        gone = run_playbook(
            tmp_path, [{"name": "gone", PI: dict(twin, state="absent")}], module_defaults=defaults
        )
        assert gone.rc == 0, gone.stdout[-3000:]


# A name that renders to RENDERED only if something renders it: a bare "{{ 7 * 7 }}" rendered to
# "49", which the listing's own timestamps, addresses and names also hold now and then.
TEMPLATE = "{{ 'foreign-entry' ~ '-rendered-' ~ 7 * 7 }}"
RENDERED = "foreign-entry-rendered-49"

FOREIGN_ENTRIES = {
    "a list": ([], "not a mapping"),
    "no hosts key": ({"errors": [], "warnings": []}, "hosts: missing"),
    "hosts not a list": ({"hosts": "p1", "errors": [], "warnings": []}, "hosts: not a list"),
    "a host missing fields": (
        {"hosts": [{"name": "p1"}], "errors": [], "warnings": []},
        "hosts[0].id: missing",
    ),
    "a templated name": (
        {"hosts": [{"name": {"__ansible_unsafe": TEMPLATE}}], "errors": [], "warnings": []},
        "hosts[0].id: missing",
    ),
}


@pytest.mark.parametrize("case", sorted(FOREIGN_ENTRIES))
def test_a_cache_entry_of_another_shape_is_listed_afresh_with_a_warning(fleet, tmp_path, case):
    """An entry another writer left under the cache key (another plugin sharing the connection, an
    older release, a hand edit) is a miss: the providers are listed again and the entry replaced,
    never an empty inventory that exits 0 as if there were no proxies."""
    entry, problem = FOREIGN_ENTRIES[case]
    cache_dir = tmp_path / "cache"
    source = cli.write_source(
        tmp_path,
        providers_file=fleet["providers_file"],
        cache=True,
        cache_plugin="ansible.builtin.jsonfile",
        cache_connection=str(cache_dir),
        cache_timeout=3600,
    )
    assert cli.inventory(source).rc == 0
    (cached,) = os.listdir(cache_dir)
    with open(cache_dir / cached, encoding="utf-8") as handle:
        envelope = json.load(handle)
    envelope["__payload__"] = json.dumps(entry)
    with open(cache_dir / cached, "w", encoding="utf-8") as handle:
        json.dump(envelope, handle)

    run = cli.inventory(source)
    assert run.rc == 0, run.stderr
    assert sorted(run.hostvars) == sorted(fleet["instances"])
    assert "is not this plugin's listing (%s): listed afresh" % problem in " ".join(run.stderr.split())
    assert RENDERED not in run.stdout  # the foreign entry's template was never rendered
    with open(cache_dir / cached, encoding="utf-8") as handle:
        stored = json.loads(json.load(handle)["__payload__"])
    assert sorted(h["name"] for h in stored["hosts"]) == sorted(fleet["instances"])
