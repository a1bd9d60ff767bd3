"""What a local module test left on disk: instance directories and live Squid processes."""

from __future__ import annotations

import json
import os


def instance_dirs(state_dir) -> list:
    instances = state_dir / "instances"
    return (
        sorted(p.name for p in instances.iterdir() if not p.name.startswith("."))
        if instances.exists()
        else []
    )


def squid_pids(state_dir) -> list:
    pids = []
    for record in (state_dir / "instances").glob("*/process.json"):
        pid = json.loads(record.read_text())["pid"]
        if os.path.exists("/proc/%d" % pid):
            pids.append(pid)
    return pids
