"""docs/playbooks.md's walkthrough and auth commands, and docs/modules.md's tracing commands, run
as written by a shell, against the local provider with real Squid.

Taken from the Markdown at test time. The only rewrites, as a reader with no hypervisor would
make them: ``/etc/egress-proxies`` is a scratch directory; the providers file it holds defines
the inventory's provider ``hv`` as a local provider (scratch ``stateDir``, free loopback range)
instead of a kvm2 host; the OTLP endpoint's port is a local receiver's free port. The shell
runs in a scratch directory holding the inventory, ``squid-user-data.yaml`` and ``playbooks/``
(this checkout's). ``ansible-vault`` and ``--ask-vault-pass`` get their password on a terminal
(pexpect), and the editor ``ansible-vault create`` opens writes the block's comment with the
``...`` replaced by a password.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
import uuid

import pexpect
import pytest
import yaml
from contract.local_backend import random_loopback_range
from integration.local_env import instance_dirs, kill_squids
from integration.playbook import ansible_environ
from otlp_receiver import Receiver
from proxy_traffic import fetch_via, origin_server, until

from .markdown_blocks import ROOT, blocks

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

ETC = "/etc/egress-proxies"
CALLBACKS = os.path.join(ROOT, "tests", "integration", "callback_plugins")
UIDS = ["team-a-1", "team-a-2", "team-b-1"]  # the inventory's egress_proxies hosts


def one_block(path: str, needle: str):
    found = [b for b in blocks(path) if needle in b.text]
    assert len(found) == 1, "%s: %d blocks contain %r" % (path, len(found), needle)
    return found[0]


def commands(text: str) -> list[tuple[str, str]]:
    """A shell block's commands (backslash continuations joined) with their trailing comments."""
    joined = re.sub(r"\\\n\s*", " ", text)
    found = []
    for line in joined.splitlines():
        command, _hash, comment = line.partition("  #")
        if command.strip():
            found.append((command.strip(), comment.strip()))
    return found


class Operator:
    """A scratch working directory laid out as the walkthrough expects, and a shell to run in it."""

    def __init__(self, root):
        self.root = root
        self.etc = root / "etc"
        self.state = root / "state"
        self.etc.mkdir()
        local = {"stateDir": str(self.state), "addressRange": random_loopback_range()}
        installation = "docs-%s" % uuid.uuid4().hex[:8]
        providers = {
            "installation": installation,
            "providers": [{"name": "hv", "type": "local", "local": local}],
        }
        (self.etc / "providers.yaml").write_text(yaml.safe_dump(providers))
        inventory = one_block("docs/playbooks.md", "# inventory.yml").text
        (root / "inventory.yml").write_text(self.rewrite(inventory))
        (root / "squid-user-data.yaml").write_text("#cloud-config\n")
        os.symlink(os.path.join(ROOT, "playbooks"), root / "playbooks")
        self.environ = ansible_environ(
            PATH="%s:%s" % (os.path.dirname(sys.executable), os.environ["PATH"]),
            ANSIBLE_STDOUT_CALLBACK="task_results",
            ANSIBLE_CALLBACK_PLUGINS=CALLBACKS,
            ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        )

    def rewrite(self, text: str) -> str:
        return text.replace(ETC, str(self.etc))

    def shell(self, command: str, **env: str) -> tuple[int, dict, str]:
        """Run one documented command; returns rc, the task results and the whole output."""
        proc = subprocess.run(
            self.rewrite(command),
            shell=True,
            cwd=self.root,
            env=dict(self.environ, **env),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        return proc.returncode, results(proc.stdout), proc.stdout + proc.stderr

    def terminal(self, command: str, answers: list[tuple[str, str]], **env: str) -> tuple[int, dict, str]:
        """Run one documented command on a terminal, answering its prompts in order."""
        child = pexpect.spawn(
            "/bin/bash",
            ["-c", self.rewrite(command)],
            cwd=str(self.root),
            env=dict(self.environ, **env),
            encoding="utf-8",
            timeout=600,
        )
        for prompt, answer in answers:
            child.expect(prompt)
            child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        output = child.before or ""
        return child.exitstatus, results(output), output


def shape(line: str) -> re.Pattern:
    """A documented output line as a pattern: each ``<placeholder>`` stands for any text."""
    parts = re.split(r"<[^>]+>", line)
    return re.compile(".+".join(re.escape(part) for part in parts) + "$")


def documented_tree(text: str, name: str) -> dict:
    """docs/local-provider.md's state directory tree as {relative path: is a directory}: entries
    are the first word of lines indented by 2, 4 or 6 spaces (deeper lines continue a comment);
    ``<name>`` is the instance, and entries made only by a pool run are left out."""
    tree, parents = {}, {}
    for line in text.splitlines()[1:]:
        depth = len(line) - len(line.lstrip(" "))
        if depth not in (2, 4, 6) or "<pool>" in line:
            continue
        entry = line.split()[0].replace("<name>", name)
        path = os.path.join(parents.get(depth - 2, ""), entry.rstrip("/"))
        parents[depth] = path
        tree[path] = entry.endswith("/")
    return tree


def results(output: str) -> dict:
    start = output.find('{"tasks": ')
    return json.loads(output[start:])["tasks"] if start >= 0 else {}


def task(tasks: dict, name: str) -> dict:
    """A task's result by name; a role's tasks are keyed ``<role> : <name>``."""
    (key,) = [k for k in tasks if k == name or k.endswith(" : " + name)]
    return tasks[key]


@pytest.fixture(scope="module")
def operator(tmp_path_factory):
    made = Operator(tmp_path_factory.mktemp("i37-docs-playbooks"))
    yield made
    try:
        if instance_dirs(made.state):
            rc, _tasks, out = made.shell("ansible-playbook -i inventory.yml playbooks/proxies_delete.yml")
            assert rc == 0, out[-3000:]
        assert instance_dirs(made.state) == []
    finally:
        assert kill_squids(made.state) == []


def test_the_walkthrough_creates_the_inventory_proxies_then_changes_nothing(operator):
    """ "From nothing to proxies on a libvirt host": the inventory of the section and its create
    command (the hypervisor command needs a KVM host: marked check-only, and the test lists the
    hosts it would prepare)."""
    (prepare,) = commands(one_block("docs/playbooks.md", "playbooks/libvirt_host.yml").text)
    rc, _tasks, out = operator.shell(prepare[0] + " --list-hosts")
    assert rc == 0 and re.search(r"hosts \(1\):\s+beelink", out), out[-3000:]
    (create,) = commands(one_block("docs/playbooks.md", "playbooks/proxies_create.yml   #").text)
    assert create[1] == "the proxies, waiting until they run"
    rc, tasks, out = operator.shell(create[0])
    assert rc == 0, out[-3000:]
    converged = task(tasks, "Converge the proxies")
    assert sorted(r["uid"] for r in converged["results"]) == UIDS
    assert {r["state"] for r in converged["results"]} == {"Running"}
    shown = task(tasks, "Show where they are")["msg"]
    names = {r["uid"]: r["name"] for r in converged["results"]}
    # "<inventory host>: <instance name> <state> <ip>"
    assert sorted(line.split()[:3] for line in shown) == [["%s:" % u, names[u], "Running"] for u in UIDS]
    # docs/local-provider.md's squid.conf, line by line (placeholders stand for any text)
    documented = one_block("docs/local-provider.md", "http_port <address>:<port>").text.splitlines()
    with open(operator.state / "instances" / names[UIDS[0]] / "squid.conf", encoding="utf-8") as handle:
        written = handle.read().splitlines()
    assert len(written) == len(documented), written
    for doc_line, line in zip(documented, written, strict=True):
        assert shape(doc_line.split("  #")[0].rstrip()).match(line), (doc_line, line)
    rc, tasks, out = operator.shell(create[0])
    assert rc == 0 and task(tasks, "Converge the proxies")["changed"] is False, out[-3000:]


def test_the_tracing_commands_of_modules_md_send_the_module_spans(operator):
    """docs/modules.md's two commands: each module run a trace of its own, then the whole
    playbook under the given TRACEPARENT. The inventory is the walkthrough's (ANSIBLE_INVENTORY,
    as the commands name none), the providers file comes from EGRESS_PROXIES_PROVIDERS_FILE."""
    alone, under = [
        one_block("docs/modules.md", needle) for needle in ("4318 ansible-playbook", "TRACEPARENT=00-")
    ]
    env = {"ANSIBLE_INVENTORY": str(operator.root / "inventory.yml")}
    with Receiver() as receiver:
        port = receiver.endpoint.rsplit(":", 1)[1]
        for block in (alone, under):
            ((command, _comment),) = commands(block.text)
            assert "http://127.0.0.1:4318" in command
            before = len(receiver.named("module.proxy_instance"))
            rc, _tasks, out = operator.shell(command.replace(":4318", ":" + port), **env)
            assert rc == 0, out[-3000:]
            receiver.wait_for(
                lambda spans, before=before: (
                    len([s for s in spans if s.name == "module.proxy_instance"]) > before
                ),
                "the module span of %s" % block.where,
            )
        modules = receiver.named("module.proxy_instance")
    first, second = modules[0], modules[-1]
    assert first.parent_id == "", first  # a trace of its own
    traceparent = re.search(r"TRACEPARENT=00-(\w{32})-(\w{16})-01", under.text)
    assert (second.trace_id, second.parent_id) == traceparent.groups(), second


def test_the_auth_commands_protect_every_proxy_then_rotate(operator):
    """ "Basic authentication": a vault made with ``ansible-vault create``, the create run with
    ``--ask-vault-pass`` (407 without the credentials, 200 with), then the plain vars file under
    /etc/egress-proxies with another password (a rotation). No password is printed."""
    vault_create, from_vault, from_file = commands(
        one_block("docs/playbooks.md", "ansible-vault create").text
    )
    assert vault_create[1].startswith("egress_proxies_auth: {username: crawler, password: ...}")
    first, second = "Vaulted-%s" % uuid.uuid4().hex, "Rotated-%s" % uuid.uuid4().hex
    vault_password = "vault-%s" % uuid.uuid4().hex
    editor = operator.root / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "%s\\n" "$AUTH_CONTENT" > "$1"\n')
    editor.chmod(0o700)
    content = vault_create[1].replace("...", first)
    rc, _tasks, out = operator.terminal(
        vault_create[0],
        [("New Vault password: ", vault_password), ("Confirm New Vault password: ", vault_password)],
        EDITOR=str(editor),
        AUTH_CONTENT=content,
    )
    assert rc == 0, out[-3000:]
    assert (operator.root / "auth.yml").read_text().startswith("$ANSIBLE_VAULT;")

    rc, tasks, out = operator.terminal(from_vault[0], [("Vault password: ", vault_password)])
    assert rc == 0, out[-3000:]
    converged = task(tasks, "Converge the proxies")
    assert sorted(r["uid"] for r in converged["results"]) == UIDS
    ips = [r["ip"] for r in converged["results"]]
    outputs = [out]
    plain = operator.etc / "auth.yml"
    plain.write_text(content.replace(first, second) + "\n")
    plain.chmod(stat.S_IRUSR | stat.S_IWUSR)  # "a plain vars file readable only by you"
    with origin_server() as origin:
        for ip in ips:
            assert fetch_via(ip, 3128, origin)[0] == 407
            assert fetch_via(ip, 3128, origin, credentials=("crawler", first)) == (200, "hello /via-proxy")
        rc, tasks, out = operator.shell(from_file[0])
        outputs.append(out)
        assert rc == 0 and task(tasks, "Converge the proxies")["changed"] is True, out[-3000:]
        for ip in ips:
            until(
                "the rotated password",
                lambda ip=ip: fetch_via(ip, 3128, origin, credentials=("crawler", second))[0] == 200,
            )
            assert fetch_via(ip, 3128, origin, credentials=("crawler", first))[0] == 407
    for text in outputs:
        assert first not in text and second not in text
    # docs/local-provider.md's state directory tree, as a proxy with auth has it
    name = converged["results"][0]["name"]
    documented = documented_tree(one_block("docs/local-provider.md", "<stateDir>/").text, name)
    found = {}
    for directory, subdirs, files in os.walk(operator.state / "instances" / name):
        for entry in subdirs + files:
            full = os.path.join(directory, entry)
            found[os.path.relpath(full, operator.state)] = entry in subdirs
    instance_part = {p: d for p, d in documented.items() if p.startswith("instances/")}
    assert found == {p: d for p, d in instance_part.items() if p != os.path.join("instances", name)}
    for path, is_dir in documented.items():
        assert os.path.isdir(operator.state / path) if is_dir else os.path.isfile(operator.state / path), path
    assert shlex.split(from_file[0])[-1] == "@%s/auth.yml" % ETC
