"""Issue 28 §1: the module runs as root, Squid as ``proxy``; no write, read, chmod, chown,
rename or delete made as root may follow a link the Squid user planted.

Each test plants links as ``proxy`` (a forked child that dropped to that user) everywhere it
can near where root writes, then runs the operation and proves the root-only target outside is
untouched (content, mode, owner) and the operation either succeeded safely or failed clearly.
The upgrade path is covered too: an instance directory of the old layout (owned by ``proxy``,
logs beside the config) is still found, is taken back before root writes in it, and deletes.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import signal
import stat
import time
import uuid

import pytest
from proxy_traffic import fetch_via, until

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import process
from contract import local_fixtures, squid_user
from contract.local_backend import SQUID
from contract.suite import cleanup, dl, wait_for_state

pytestmark = pytest.mark.squid
backend, origin = local_fixtures.backend, local_fixtures.origin  # the shared fixtures

ROOT_WRITES = ("squid.conf.tmp", "passwd.tmp", "process.json.tmp", "squid.out", "squid.conf", "passwd")
SQUID_WRITES = ("cache.log", "access.log")


@pytest.fixture(autouse=True)
def _as_root():
    assert os.geteuid() == 0, "these tests plant links as the Squid user: they run as root"


@pytest.fixture
def target(tmp_path):
    return squid_user.root_only_file(tmp_path / "root-only")


def _running_with_auth(backend, auth):
    req = dataclasses.replace(backend.request(str(uuid.uuid4())), auth=auth)
    provider_id = backend.provider.create(req, dl(backend))
    running = wait_for_state(backend, provider_id, (contract.RUNNING,))[-1]
    return req, provider_id, running


def _squid_dirs(directory: str) -> list:
    """The instance directory and, in the current layout, Squid's own ``run/``."""
    run = os.path.join(directory, "run")
    return [directory] + ([run] if os.path.isdir(run) and not os.path.islink(run) else [])


def _plant_everywhere(directory: str, target_path: str, names=ROOT_WRITES) -> dict:
    planted = {}
    for where in _squid_dirs(directory):
        links = {name: target_path for name in names}
        for name, done in squid_user.plant_links(where, links).items():
            planted[os.path.relpath(os.path.join(where, name), directory)] = done
    return planted


def _settle(backend, provider_id: str, seconds: float = 10.0) -> str:
    """Wait until a starting Squid is Running or has given up (it has opened its logs by then);
    returns the last state, whatever it is: what matters next is what was written."""
    end = time.monotonic() + seconds
    state = backend.provider.get(provider_id, dl(backend)).state
    while state not in (contract.RUNNING, contract.STOPPED) and time.monotonic() < end:
        time.sleep(0.1)
        state = backend.provider.get(provider_id, dl(backend)).state
    return state


def _killed_instance(backend) -> tuple:
    """A Running instance whose Squid was then SIGKILLed: ``(req, provider_id, directory)``."""
    req = backend.request(str(uuid.uuid4()))
    provider_id = backend.provider.create(req, dl(backend))
    wait_for_state(backend, provider_id, (contract.RUNNING,))
    directory = backend.instance_dir(provider_id)
    _kill(directory)
    return req, provider_id, directory


def _kill(directory: str) -> None:
    state, pid = process.status(directory)
    assert state == process.ALIVE
    os.kill(pid, signal.SIGKILL)
    child = process._children.pop(pid, None)
    if child is not None:
        child.wait(5)
    end = time.monotonic() + 5
    while process.status(directory)[0] != process.DEAD:
        assert time.monotonic() < end, "squid pid %d did not die" % pid
        time.sleep(0.02)


def test_rotation_never_writes_through_a_link_the_squid_user_planted(backend, origin, target):
    """Was: ``proxy`` linked ``squid.conf.tmp`` to a root-only file; rotating the password
    overwrote that file with the generated squid.conf. Now the Squid user cannot plant a link
    where root writes, and rotation writes only fresh files renamed into place."""
    old, new = Auth("crawler", "Old-pw-1a"), Auth("crawler", "New-pw-2b")
    with cleanup(backend) as ids:
        req, provider_id, running = _running_with_auth(backend, old)
        ids.append(provider_id)
        directory = backend.instance_dir(provider_id)
        planted = _plant_everywhere(directory, target[0])

        assert backend.provider.sync_auth(provider_id, new, Deadline(10)) is True
        assert squid_user.digest(target[0]) == target[1], "the root-only file was written"
        assert not any(done for name, done in planted.items() if not name.startswith("run/")), planted
        for name in ("squid.conf", "passwd"):
            assert stat.S_ISREG(os.lstat(os.path.join(directory, name)).st_mode), name
        until(
            "the new password accepted",
            lambda: fetch_via(running.ip, req.port, origin, "127.0.0.1", ("crawler", new.password))[0] == 200,
        )
        assert squid_user.digest(target[0]) == target[1], "Squid wrote through a link as root"


def test_restart_never_appends_squid_output_through_a_planted_link(backend, target):
    """Was: ``proxy`` killed its Squid and replaced ``squid.out`` by a link; ``state: present``
    appended Squid's output to the root-only file. Now ``squid.out`` lies in root's directory,
    and the links the Squid user can plant in its own ``run/`` are followed by Squid only as
    that user, who cannot write the target."""
    with cleanup(backend) as ids:
        req, provider_id, directory = _killed_instance(backend)
        ids.append(provider_id)
        planted = _plant_everywhere(directory, target[0], ROOT_WRITES + SQUID_WRITES)

        backend.provider.create(req, dl(backend))  # state: present starts it again
        _settle(backend, provider_id)
        assert squid_user.digest(target[0]) == target[1], "the root-only file was appended to"
        assert planted["squid.out"] is False, "squid.out is root's, in root's directory"
        # Its own logs the Squid user may link anywhere: Squid opens them as that user, who
        # cannot write the target (so that Squid stops; the user could kill it anyway).
        assert planted["run/cache.log"] is True
        backend.provider.delete(provider_id, dl(backend))
        ids.remove(provider_id)
        assert squid_user.digest(target[0]) == target[1]
        assert os.path.exists(target[0]), "delete removed a link's target"


def _to_old_layout(directory: str) -> None:
    """What dd934a7 left on disk: the directory and the password file owned by ``proxy``,
    Squid's logs beside the config, no ``run/``."""
    entry = squid_user.squid_user()
    run = os.path.join(directory, "run")
    if os.path.isdir(run):
        for name in os.listdir(run):
            os.rename(os.path.join(run, name), os.path.join(directory, name))
        os.rmdir(run)
    conf = os.path.join(directory, process.CONF)
    with open(conf, encoding="utf-8") as handle:
        text = handle.read().replace(" run/", " ").replace(":run/", ":")
    with open(conf, "w", encoding="utf-8") as handle:
        handle.write(text)
    passwd = os.path.join(directory, "passwd")
    if os.path.exists(passwd):
        os.chown(passwd, entry.pw_uid, entry.pw_gid)
        os.chmod(passwd, 0o600)
    os.chown(directory, entry.pw_uid, entry.pw_gid)


def test_old_layout_instance_is_found_taken_back_and_rotated_safely(backend, origin, target):
    """Upgrade path: an instance made by the old layout, still running, with links the Squid
    user planted while it owned the directory, is listed, rotated without following any of
    them, ends in the current layout (root's directory, Squid's ``run/``), and deletes."""
    old, new = Auth("crawler", "Old-pw-3c"), Auth("crawler", "New-pw-4d")
    with cleanup(backend) as ids:
        req, provider_id, _running = _running_with_auth(backend, old)
        ids.append(provider_id)
        directory = backend.instance_dir(provider_id)
        process.stop(directory, req.name, Deadline(10))
        _to_old_layout(directory)
        process.start(SQUID, directory, req.name)
        running = wait_for_state(backend, provider_id, (contract.RUNNING,))[-1]
        planted = squid_user.plant_links(directory, {name: target[0] for name in ROOT_WRITES[:3]})
        assert all(planted.values()), "the old layout let the Squid user plant links: %s" % planted
        assert [i.id for i in backend.provider.list_by_tag(dl(backend))] == [provider_id]

        assert backend.provider.sync_auth(provider_id, new, Deadline(10)) is True
        assert squid_user.digest(target[0]) == target[1], "the root-only file was written"
        info = os.stat(directory)
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o755), "the directory was taken back"
        assert os.stat(os.path.join(directory, "run")).st_uid == pwd.getpwnam("proxy").pw_uid
        assert os.stat(os.path.join(directory, "passwd")).st_uid == 0
        until(
            "the new password accepted",
            lambda: fetch_via(running.ip, req.port, origin, "127.0.0.1", ("crawler", new.password))[0] == 200,
        )
        backend.provider.delete(provider_id, dl(backend))
        ids.remove(provider_id)
        assert backend.leftovers(provider_id) == []
        assert squid_user.digest(target[0]) == target[1]


@pytest.mark.parametrize("planted", ["squid.out", "passwd"])
def test_old_layout_planted_link_fails_clearly_and_touches_nothing(backend, target, planted):
    """Upgrade path, the second way in: a stopped old-layout instance whose ``squid.out`` (or
    ``passwd``) the Squid user replaced by a link. ``state: present`` refuses it by name
    (permanent: the link must be removed), follows nothing, starts nothing (a passwd link is
    never taken for "no auth" either); delete still removes the instance."""
    with cleanup(backend) as ids:
        req, provider_id, _running = _running_with_auth(backend, Auth("crawler", "Pw-5e"))
        ids.append(provider_id)
        directory = backend.instance_dir(provider_id)
        _kill(directory)
        _to_old_layout(directory)
        assert squid_user.plant_links(directory, {planted: target[0]}) == {planted: True}

        with pytest.raises(errors.ProviderError) as failed:
            backend.provider.create(req, dl(backend))
        assert failed.value.error_class == errors.PERMANENT
        assert planted in str(failed.value) and "symbolic link" in str(failed.value)
        assert squid_user.digest(target[0]) == target[1], "the root-only file was written"
        assert backend.squid_pids(os.path.join(directory, process.CONF)) == [], "nothing started"
        backend.provider.delete(provider_id, dl(backend))
        ids.remove(provider_id)
        assert backend.leftovers(provider_id) == []
        assert os.path.exists(target[0])
