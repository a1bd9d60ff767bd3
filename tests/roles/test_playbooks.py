"""The shipped playbooks (playbooks/proxies_create.yml, proxies_delete.yml, collect_orphans.yml,
check_providers.yml, proxy_pool.yml) run as an operator runs them: real ``ansible-playbook`` with an inventory
file and a providers file, on the local provider with real Squid.

Covers: the inventory becomes proxies that serve (Running, with an address), a second run
changes nothing, the provider check passes, an orphan (a proxy not in the inventory) is listed
by the dry run and deleted only when applied, and the delete playbook leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid

import pytest
import yaml
from contract.local_backend import random_loopback_range
from integration.playbook import BIN, COLLECTIONS
from proxy_traffic import fetch_via, origin_server, until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALLBACKS = os.path.join(ROOT, "tests", "integration", "callback_plugins")
APPLY = ("-e", "egress_proxies_gc_apply=true", "-e", "egress_proxies_gc_min_age=0")

pytestmark = [pytest.mark.squid, pytest.mark.playbook]


def run(playbook: str, inventory: str, *extra: str) -> tuple:
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_STDOUT_CALLBACK="task_results",
        ANSIBLE_CALLBACK_PLUGINS=CALLBACKS,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCALHOST_WARNING="false",
    )
    proc = subprocess.run(
        [
            os.path.join(BIN, "ansible-playbook"),
            "-i",
            inventory,
            os.path.join(ROOT, "playbooks", playbook),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    start = proc.stdout.find('{"tasks": ')
    tasks = json.loads(proc.stdout[start:])["tasks"] if start >= 0 else {}
    return proc.returncode, tasks, proc.stdout + proc.stderr


def task(tasks: dict, name: str) -> dict:
    """A task's result by its name; a role's tasks are keyed ``<role> : <name>``."""
    (key,) = [k for k in tasks if k == name or k.endswith(" : " + name)]
    return tasks[key]


@pytest.fixture
def operator_files(tmp_path):
    providers = tmp_path / "providers.yaml"
    providers.write_text(
        yaml.safe_dump(
            {
                "installation": "pb-%s" % uuid.uuid4().hex[:8],
                "providers": [
                    {
                        "name": "local",
                        "type": "local",
                        "local": {
                            "stateDir": str(tmp_path / "state"),
                            "addressRange": random_loopback_range(),
                        },
                    }
                ],
            }
        )
    )
    uids = ["pb-a-%s" % uuid.uuid4().hex[:6], "pb-b-%s" % uuid.uuid4().hex[:6]]
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "vars": {
                        "egress_proxies_providers_file": str(providers),
                        "egress_proxies_provider": "local",
                        "egress_proxies_wait_timeout": 60,
                    },
                    "children": {"egress_proxies": {"hosts": {u: {} for u in uids}}},
                }
            }
        )
    )
    yield str(inventory), str(providers), uids
    # Whatever a failed test left: delete through the module, by listing.
    state = tmp_path / "state" / "instances"
    if state.exists() and any(state.iterdir()):
        run("proxies_delete.yml", str(inventory))
        run(
            "collect_orphans.yml",
            str(inventory),
            "-e",
            "egress_proxies_gc_apply=true",
            "-e",
            "egress_proxies_gc_min_age=0",
        )


def test_create_check_collect_delete(operator_files, tmp_path):
    inventory, _providers, uids = operator_files
    rc, tasks, out = run("proxies_create.yml", inventory)
    assert rc == 0, out[-3000:]
    converged = task(tasks, "Converge the proxies")
    assert converged["changed"] is True
    assert sorted(r["uid"] for r in converged["results"]) == sorted(uids)
    assert {r["state"] for r in converged["results"]} == {"Running"}
    assert all(r["ip"].startswith("127.") for r in converged["results"])

    shown = task(tasks, "Show where they are")["msg"]
    names = {r["uid"]: r["name"] for r in converged["results"]}
    assert sorted(line.split()[:3] for line in shown) == sorted(
        ["%s:" % uid, names[uid], "Running"] for uid in uids
    ), shown  # issue 37: the inventory host beside each proxy-<hash>

    rc, tasks, out = run("proxies_create.yml", inventory)
    assert rc == 0, out[-3000:]
    assert task(tasks, "Converge the proxies")["changed"] is False

    rc, tasks, out = run("check_providers.yml", inventory)
    assert rc == 0, out[-3000:]
    lines = [line.split()[:5] for line in task(tasks, "Report each target")["msg"]]
    assert lines == [
        ["local", "local", "squid", "ready", "Reachable"],
        ["local", "local", "stateDir", "ready", "Reachable"],
    ]

    # An orphan: a proxy this inventory does not list.
    orphan = "pb-orphan-%s" % uuid.uuid4().hex[:6]
    orphan_inventory = tmp_path / "orphan.yml"
    with open(inventory, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    doc["all"]["children"]["egress_proxies"]["hosts"] = {orphan: {}}
    orphan_inventory.write_text(yaml.safe_dump(doc))
    rc, _tasks, out = run("proxies_create.yml", str(orphan_inventory))
    assert rc == 0, out[-3000:]

    # Issue 37: an orphan younger than min_age is reported as kept, with when it reaches min_age.
    rc, tasks, out = run("collect_orphans.yml", inventory)
    assert rc == 0, out[-3000:]
    report = task(tasks, "Report")["msg"]
    assert report[0] == "would delete: nothing", report
    assert re.fullmatch(
        r"kept as younger than min_age \(10m\): proxy-\w+ \(uid %s, reaches 10m at " % orphan
        + r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)",
        report[1],
    ), report

    rc, tasks, out = run("collect_orphans.yml", inventory, "-e", "egress_proxies_gc_min_age=0")
    assert rc == 0, out[-3000:]
    sweep = task(tasks, "Sweep every provider")
    assert [i["uid"] for i in sweep["would_delete"]] == [orphan]
    assert task(tasks, "Report")["msg"][0] == "would delete: %s (uid %s)" % (
        sweep["would_delete"][0]["name"],
        orphan,
    )
    assert task(tasks, "Report")["msg"][1] == "kept as younger than min_age (0): none"
    rc, tasks, out = run("collect_orphans.yml", inventory, "-e", "egress_proxies_gc_min_age=0")
    assert [i["uid"] for i in task(tasks, "Sweep every provider")["would_delete"]] == [orphan], (
        "dry run deleted"
    )

    rc, tasks, out = run(
        "collect_orphans.yml",
        inventory,
        "-e",
        "egress_proxies_gc_apply=true",
        "-e",
        "egress_proxies_gc_min_age=0",
    )
    assert rc == 0, out[-3000:]
    assert [i["uid"] for i in task(tasks, "Sweep every provider")["deleted"]] == [orphan]
    assert sorted(i["uid"] for i in task(tasks, "Sweep every provider")["kept"]) == sorted(uids)

    rc, tasks, out = run("proxies_delete.yml", inventory)
    assert rc == 0, out[-3000:]
    assert {r["state"] for r in task(tasks, "Converge the proxies")["results"]} == {"absent"}
    assert not any((tmp_path / "state" / "instances").iterdir())


def test_the_pool_playbook_converges_a_pool_again_without_change_and_removes_it(operator_files):
    inventory, providers, _uids = operator_files
    pool = ("-e", "egress_proxies_providers_file=%s" % providers, "-e", "egress_proxies_pool=pb")
    spread = ("-e", json.dumps({"egress_proxies_pool_spread": [{"provider": "local"}]}))
    for attempt in ("first", "again"):
        rc, tasks, out = run("proxy_pool.yml", inventory, *pool, *spread, "-e", "egress_proxies_pool_count=2")
        assert rc == 0, out[-3000:]
        result = task(tasks, "Converge the pool")
        assert [m["name"] for m in result["members"]] == ["pb-0", "pb-1"], attempt
        assert {m["state"] for m in result["members"]} == {"Running"}
        assert result["changed"] is (attempt == "first")
        assert len(task(tasks, "Show the members")["msg"]) == 2
    rc, tasks, out = run(
        "proxy_pool.yml", inventory, *pool, *spread, "-e", "egress_proxies_pool_state=absent"
    )
    assert rc == 0, out[-3000:]
    assert sorted((r["provider"], r["name"]) for r in task(tasks, "Converge the pool")["deleted"]) == [
        ("local", "pb-0"),
        ("local", "pb-1"),
    ]


@pytest.mark.parametrize("playbook", ["proxies_create.yml", "proxies_delete.yml"])
def test_a_host_without_a_provider_is_named_with_the_variables_that_set_one(
    operator_files, tmp_path, playbook
):
    """Issue 37: without egress_proxies_provider the run failed with ``instances[0].provider:
    required``, naming neither the variable nor the host."""
    inventory, _providers, uids = operator_files
    with open(inventory, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    del doc["all"]["vars"]["egress_proxies_provider"]
    doc["all"]["children"]["egress_proxies"]["hosts"][uids[1]] = {"egress_proxy_provider": "local"}
    bare = tmp_path / "no-provider.yml"
    bare.write_text(yaml.safe_dump(doc))
    rc, _tasks, out = run(playbook, str(bare))
    assert rc != 0
    assert "no provider for inventory host(s) %s: set egress_proxies_provider" % uids[0] in out, out[-3000:]
    assert "egress_proxy_provider on each host" in out
    assert not (tmp_path / "state" / "instances").exists() or not any(
        (tmp_path / "state" / "instances").iterdir()
    )


def test_auth_from_a_vault_then_rotated_from_a_file(operator_files, tmp_path):
    """Issue 37: the ready playbooks take basic-auth credentials (egress_proxies_auth) from a vault
    or a vars file; a changed password rotates them; the password is never printed."""
    inventory, _providers, uids = operator_files
    first, second = "Vaulted-%s" % uuid.uuid4().hex, "Rotated-%s" % uuid.uuid4().hex
    vault_password = tmp_path / "vault-pass"
    vault_password.write_text("vault-%s\n" % uuid.uuid4().hex)
    vaulted = tmp_path / "auth-vault.yml"
    vaulted.write_text(yaml.safe_dump({"egress_proxies_auth": {"username": "crawler", "password": first}}))
    encrypt = subprocess.run(
        [
            os.path.join(BIN, "ansible-vault"),
            "encrypt",
            "--vault-password-file",
            str(vault_password),
            str(vaulted),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert encrypt.returncode == 0 and first not in vaulted.read_text(), encrypt.stderr
    rc, tasks, out = run(
        "proxies_create.yml",
        inventory,
        "-e",
        "@%s" % vaulted,
        "--vault-password-file",
        str(vault_password),
        "-v",
    )
    assert rc == 0, out[-3000:]
    ips = [r["ip"] for r in task(tasks, "Converge the proxies")["results"]]
    assert len(ips) == len(uids)
    with origin_server() as origin:
        for ip in ips:
            assert fetch_via(ip, 3128, origin)[0] == 407
            assert fetch_via(ip, 3128, origin, credentials=("crawler", first)) == (200, "hello /via-proxy")

        plain = tmp_path / "auth.yml"  # the same variable from a plain vars file: a rotation
        plain.write_text(yaml.safe_dump({"egress_proxies_auth": {"username": "crawler", "password": second}}))
        rc, tasks, out2 = run("proxies_create.yml", inventory, "-e", "@%s" % plain, "-v")
        assert rc == 0, out2[-3000:]
        assert task(tasks, "Converge the proxies")["changed"] is True
        for ip in ips:
            until(
                "the rotated password",
                lambda ip=ip: fetch_via(ip, 3128, origin, credentials=("crawler", second))[0] == 200,
            )
            assert fetch_via(ip, 3128, origin, credentials=("crawler", first))[0] == 407
        rc, tasks, out3 = run("proxies_create.yml", inventory, "-e", "@%s" % plain)
        assert rc == 0 and task(tasks, "Converge the proxies")["changed"] is False, out3[-3000:]
    for text in (out, out2, out3):
        assert first not in text and second not in text
    rc, _tasks, out = run("proxies_delete.yml", inventory)
    assert rc == 0, out[-3000:]
