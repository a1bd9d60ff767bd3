"""Run the real ``ansible-inventory`` (and ``ansible-playbook -i``) on an inventory plugin source.

The inventory plugin tests go through this: a ``*.proxies.yml`` source is written to a temp dir
and read by the venv's ``ansible-inventory`` with the collection found through
ANSIBLE_COLLECTIONS_PATH (as ``make`` exports it), so the plugin runs exactly as a user's would.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess

import yaml

from .playbook import BIN, ansible_environ

PLUGIN = "crawl.egress_proxies.proxies"


def environ(extra: dict | None = None) -> dict:
    # A source no plugin could parse fails the command instead of a warning.
    env = ansible_environ(ANSIBLE_INVENTORY_UNPARSED_FAILED="true")
    env.pop("EGRESS_PROXIES_PROVIDERS_FILE", None)
    env.update(extra or {})
    return env


def write_source(directory, name: str = "test.proxies.yml", **options) -> str:
    path = os.path.join(str(directory), name)
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"plugin": PLUGIN, **options}, handle, sort_keys=False)
    return path


def write_providers(directory, document: dict, name: str = "providers.yaml") -> str:
    path = os.path.join(str(directory), name)
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(document, handle, sort_keys=False)
    return path


def write_local_provider(directory, address_range: str, name: str = "loc") -> str:
    """A providers file with one local provider ``name`` keeping its state under ``directory``."""
    local = {"stateDir": os.path.join(str(directory), "state"), "addressRange": address_range}
    return write_providers(directory, {"providers": [{"name": name, "type": "local", "local": local}]})


@dataclasses.dataclass
class InventoryRun:
    rc: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict:
        lines = self.stdout.splitlines()
        start = lines.index("{")  # after any -v output: the document's first line is a bare brace
        return json.loads("\n".join(lines[start:]), object_hook=_plain)

    @property
    def hostvars(self) -> dict:
        return self.data["_meta"]["hostvars"]

    def hosts_of(self, group: str) -> list:
        """The hosts directly in ``group`` (``--list`` output)."""
        return sorted(self.data.get(group, {}).get("hosts", []))


def _plain(obj: dict):
    """``{"__ansible_unsafe": s}`` is how ``--list`` marks a value that is never templated (every
    value a plugin reads from a backend): the tests compare the strings."""
    return obj["__ansible_unsafe"] if set(obj) == {"__ansible_unsafe"} else obj


def run(*argv: str, env: dict | None = None, timeout: float = 300) -> InventoryRun:
    proc = subprocess.run(
        [os.path.join(BIN, argv[0]), *argv[1:]],
        capture_output=True,
        text=True,
        env=environ(env),
        timeout=timeout,
        check=False,
    )
    return InventoryRun(proc.returncode, proc.stdout, proc.stderr)


def inventory(source: str, *args: str, env: dict | None = None) -> InventoryRun:
    """``ansible-inventory -i source --list`` (or the given ``args``, e.g. ``--graph``)."""
    return run("ansible-inventory", "-i", source, *(args or ("--list",)), env=env)
