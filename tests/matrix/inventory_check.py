"""The inventory plugin's part of a matrix cell's smoke (tests/matrix/cell.sh).

Runs the cell's ``ansible-inventory`` (first on PATH) on the inventory source cell.sh wrote
(the plugin with a ``groups`` and a ``keyed_groups`` entry), ``--graph`` and ``--list``, while
exactly one proxy (``smoke-a``) exists, and checks both: the constructed groups hold that one
host, and its variables are the instance's. Exits non-zero, saying why, otherwise.

Usage: python inventory_check.py INVENTORY_SOURCE SMOKE_A_ID
"""

from __future__ import annotations

import json
import subprocess
import sys


def inventory(source: str, *args: str) -> str:
    return subprocess.run(
        ["ansible-inventory", "-i", source, *args], check=True, capture_output=True, text=True
    ).stdout


def plain(value):
    """``value`` without ansible-inventory's ``{"__ansible_unsafe": ...}`` wrappers: depending on
    the version, --list writes a string the plugin marked as never-a-template that way."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def problems(graph: str, listing: dict, smoke_a: str) -> list:
    """What is wrong with the graph and the listing (empty when nothing is)."""
    found = []
    lines = graph.splitlines()
    for group in ("@smoke_owned:", "@smoke_state_Running:"):
        if not any(line.strip(" |-") == group for line in lines):
            found.append("--graph: no group %s in %r" % (group, graph))
    owned = listing.get("smoke_owned", {}).get("hosts", [])
    running = listing.get("smoke_state_Running", {}).get("hosts", [])
    if len(owned) != 1 or running != owned:
        found.append(
            "--list: smoke_owned %r and smoke_state_Running %r should be the one host" % (owned, running)
        )
        return found
    variables = listing["_meta"]["hostvars"][owned[0]]
    proxy = variables.get("egress_proxies", {})
    if (proxy.get("uid"), proxy.get("id"), proxy.get("state")) != ("smoke-a", smoke_a, "Running"):
        found.append("--list: %s's egress_proxies is %r" % (owned[0], proxy))
    if variables.get("ansible_host") != proxy.get("ip") or not proxy.get("ip", "").startswith("127.78."):
        found.append("--list: ansible_host %r, ip %r" % (variables.get("ansible_host"), proxy.get("ip")))
    return found


def main() -> int:
    source, smoke_a = sys.argv[1:3]
    graph = inventory(source, "--graph")
    print(graph)
    found = problems(graph, plain(json.loads(inventory(source, "--list"))), smoke_a)
    for problem in found:
        print("inventory: %s" % problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
