"""Issue 28 §4: a Squid whose record (``process.json``) a crash lost is still found, reported,
stopped and collected, through real ``ansible-playbook`` runs and real Squid.

Deleting ``process.json`` under a running Squid leaves what a SIGKILL of the module between
starting Squid and recording it leaves. ``state: absent`` used to report ``absent`` and remove
the directory while that Squid kept serving, ``proxy_gc`` could not stop it, and ``present``
started a second Squid that could not bind. A full disk while writing the record (a small tmpfs
stateDir) left the started Squid running behind a ``quota_exceeded`` failure.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import uuid

import pytest

from .local_env import squid_pids
from .playbook import run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PI = "crawl.egress_proxies.proxy_instance"
GC = "crawl.egress_proxies.proxy_gc"
PORT = 3128


def _listening(ip: str, port: int = PORT) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((ip, port), timeout=1):
        return True
    return False


def _running(tmp_path, local, uid: str) -> dict:
    run = run_playbook(
        tmp_path,
        [{"name": "create", PI: {"provider": "local", "uid": uid, "wait": True, "wait_timeout": 30}}],
        module_defaults=local,
    )
    assert run.rc == 0, run.stdout[-3000:]
    instance = run["create"]["instance"]
    assert instance["state"] == "Running" and _listening(instance["ip"])
    return instance


def _lose_record(tmp_path, instance: dict) -> int:
    """What a crash right after Squid started leaves: its Squid serving, no ``process.json``."""
    name = instance["id"].split("/", 1)[1]
    os.unlink(tmp_path / "state" / "instances" / name / "process.json")
    (pid,) = squid_pids(tmp_path / "state")
    return pid


def test_absent_stops_a_squid_whose_record_a_crash_lost(tmp_path, local):
    instance = _running(tmp_path, local, str(uuid.uuid4()))
    _lose_record(tmp_path, instance)
    run = run_playbook(
        tmp_path,
        [{"name": "delete", PI: {"provider": "local", "id": instance["id"], "state": "absent"}}],
        module_defaults=local,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert run["delete"]["instance"]["state"] == "absent"
    assert squid_pids(tmp_path / "state") == [], "absent reported while its Squid still runs"
    assert not _listening(instance["ip"]), "the address still answers"


def test_present_finds_the_squid_whose_record_was_lost_instead_of_starting_another(tmp_path, local):
    uid = str(uuid.uuid4())
    instance = _running(tmp_path, local, uid)
    pid = _lose_record(tmp_path, instance)
    again = _running(tmp_path, local, uid)  # Running, not "last state Stopped"
    assert again["id"] == instance["id"]
    assert squid_pids(tmp_path / "state") == [pid], "a second Squid was started"


def test_gc_collects_a_squid_whose_record_was_lost(tmp_path, local):
    instance = _running(tmp_path, local, "orphan-" + uuid.uuid4().hex[:8])
    _lose_record(tmp_path, instance)
    run = run_playbook(
        tmp_path,
        [{"name": "gc", GC: {"live_uids": [], "min_age": "0"}}],
        module_defaults=local,
    )
    assert run.rc == 0, run["gc"].get("msg")
    assert [d["id"] for d in run["gc"]["deleted"]] == [instance["id"]]
    assert squid_pids(tmp_path / "state") == [], "gc left the Squid running"
    assert not _listening(instance["ip"])


@pytest.fixture
def tiny_state(tmp_path):
    """A 4 MiB tmpfs as the stateDir (set up before ``local``, unmounted after its teardown),
    with 1024 inodes: the default (half the RAM's pages, millions) made ``_fill`` create
    millions of empty files, 300 s of the test's time."""
    state = tmp_path / "state"
    state.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=1024,mode=0755", "tmpfs", str(state)], check=True
    )
    try:
        yield state
    finally:
        subprocess.run(["umount", str(state)], check=False)
        if os.path.ismount(str(state)):
            subprocess.run(["umount", "-l", str(state)], check=True)


def _fill(directory) -> None:
    """Use up the filesystem's blocks, then its inodes: the next new file gets ENOSPC."""
    with open(directory / "filler", "wb") as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 65536)
            handle.flush()
    count = 0
    with contextlib.suppress(OSError):
        while True:
            (directory / ("inode-%d" % count)).touch()
            count += 1


def _unfill(directory) -> None:
    for entry in os.listdir(directory):
        if entry == "filler" or entry.startswith("inode-"):
            os.unlink(directory / entry)


def test_full_disk_while_recording_squid_leaves_nothing_running(tmp_path, tiny_state, local):
    uid = str(uuid.uuid4())
    instance = _running(tmp_path, local, uid)
    (pid,) = squid_pids(tiny_state)
    os.kill(pid, 9)  # the Squid died; present must start it again and record it
    _fill(tiny_state)
    try:
        run = run_playbook(
            tmp_path,
            [{"name": "create", PI: {"provider": "local", "uid": uid, "wait": True, "wait_timeout": 10}}],
            module_defaults=local,
        )
        failed = run["create"]
        assert run.rc != 0 and failed["failed"] is True
        assert failed["error_class"] == "quota_exceeded", failed.get("msg")
        assert squid_pids(tiny_state) == [], "a Squid nobody recorded is left serving"
        assert not _listening(instance["ip"])
    finally:
        _unfill(tiny_state)
    run = run_playbook(
        tmp_path,
        [{"name": "delete", PI: {"provider": "local", "uid": uid, "state": "absent"}}],
        module_defaults=local,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert squid_pids(tiny_state) == [] and not _listening(instance["ip"])
