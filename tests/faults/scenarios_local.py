"""Faults of the local provider's backend: its state directory and its Squid processes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal

from faults.scenario import Scenario

LOCAL = ("local",)


@contextlib.contextmanager
def state_not_a_directory(target):
    """The instances directory replaced by a file (a broken volume mount)."""
    with target.backend.break_listing():
        yield 1


@contextlib.contextmanager
def store_lock_held(target):
    """Another process holds the store's lock (a stuck run) while the calls are made."""
    path = os.path.join(target.backend.state_dir, "locks", ".store")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield 1
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def squids_killed(target):
    """Every Squid of the state directory SIGKILLed (the OOM killer) as the calls start."""
    killed = 0
    for pid in target.backend.squid_pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    yield killed


@contextlib.contextmanager
def records_unreadable(target):
    """Every instance record made unreadable JSON for the fault (a half-written disk), then
    restored."""
    saved = {}
    for name in os.listdir(target.backend.instances_dir):
        path = os.path.join(target.backend.instances_dir, name, "instance.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                saved[path] = handle.read()
            with open(path, "w", encoding="utf-8") as handle:
                handle.write('{"proxy-operator-uid": ')
    try:
        yield len(saved)
    finally:
        for path, text in saved.items():
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)


@contextlib.contextmanager
def instance_locks_held(target):
    """Another process holds every instance's own lock (a run stuck mid-create)."""
    handles = []
    locks = os.path.join(target.backend.state_dir, "locks")
    for name in os.listdir(target.backend.instances_dir):
        if name.startswith("."):
            continue
        handle = open(os.path.join(locks, name), "a")  # noqa: SIM115 - closed below
        fcntl.flock(handle, fcntl.LOCK_EX)
        handles.append(handle)
    try:
        yield len(handles)
    finally:
        for handle in handles:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()


SCENARIOS = [
    Scenario(
        "local-state-not-a-directory", "the instances directory is a file", LOCAL, state_not_a_directory
    ),
    Scenario("local-store-lock-held", "another process holds the store lock", LOCAL, store_lock_held),
    Scenario("local-squid-sigkilled", "every Squid SIGKILLed as the calls start", LOCAL, squids_killed),
    Scenario(
        "local-instance-locks-held", "another process holds every instance lock", LOCAL, instance_locks_held
    ),
    Scenario("local-records-unreadable", "every instance record is cut JSON", LOCAL, records_unreadable),
]
