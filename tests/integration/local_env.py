"""What a local module test left on disk: instance directories and live Squid processes."""

from __future__ import annotations

import squid_procs


def instance_dirs(state_dir) -> list:
    instances = state_dir / "instances"
    return (
        sorted(p.name for p in instances.iterdir() if not p.name.startswith("."))
        if instances.exists()
        else []
    )


def squid_pids(state_dir) -> list:
    """Live Squids of this state directory, with or without a ``process.json``."""
    return squid_procs.squid_pids(state_dir / "instances")


def kill_squids(state_dir) -> list:
    """SIGKILL, by pid, every Squid of ``state_dir`` a failing test left; returns their pids."""
    return squid_procs.kill_all(state_dir / "instances")
