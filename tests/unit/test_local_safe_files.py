"""Unit tests, on real files, for the local provider's no-follow file operations (issue 28 §1):
a link at a name root writes, reads or appends to is never followed, a FIFO never hangs a
read, and the store refuses records and instance directories reached through a link."""

from __future__ import annotations

import os
import pwd
import stat

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import safe_files
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.store import (
    RUN,
    Store,
)

SECRET = "root-only content\n"


@pytest.fixture
def outside(tmp_path):
    path = tmp_path / "outside"
    path.write_text(SECRET)
    os.chmod(path, 0o600)
    return path


@pytest.fixture
def directory(tmp_path):
    path = tmp_path / "dir"
    path.mkdir()
    fd = os.open(str(path), os.O_RDONLY | os.O_DIRECTORY)
    yield path, fd
    os.close(fd)


def test_write_atomic_replaces_links_and_never_opens_a_planted_tmp(directory, outside):
    path, fd = directory
    for planted in ("squid.conf.tmp", ".squid.conf.tmp", "squid.conf"):
        os.symlink(str(outside), str(path / planted))
    safe_files.write_atomic(fd, "squid.conf", "new config\n", 0o640)
    assert outside.read_text() == SECRET and stat.S_IMODE(outside.stat().st_mode) == 0o600
    info = os.lstat(path / "squid.conf")
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o640
    assert (path / "squid.conf").read_text() == "new config\n"
    leftovers = sorted(os.listdir(path))
    assert leftovers == [".squid.conf.tmp", "squid.conf", "squid.conf.tmp"], "no temporary file left"


def test_reads_and_appends_refuse_a_link_by_name(directory, outside):
    path, fd = directory
    os.symlink(str(outside), str(path / "squid.out"))
    with pytest.raises(safe_files.UnsafeFile) as refused:
        safe_files.open_append(fd, "squid.out")
    assert "squid.out" in str(refused.value) and "symbolic link" in str(refused.value)
    with pytest.raises(safe_files.UnsafeFile):
        safe_files.read_text(fd, "squid.out")
    assert outside.read_text() == SECRET


def test_a_fifo_is_refused_without_hanging(directory):
    path, fd = directory
    os.mkfifo(str(path / "passwd"))
    with pytest.raises(safe_files.UnsafeFile):
        safe_files.read_text(fd, "passwd")


def test_adopt_takes_an_old_layout_directory_back(tmp_path, outside):
    assert os.geteuid() == 0, "taking a directory back from the Squid user needs root"
    proxy = pwd.getpwnam("proxy")
    store = Store(str(tmp_path / "state"), "127.200.5.0/28")
    store.create("proxy-a", "uid-a", "inst", 3128, {})
    directory = store.path("proxy-a")
    os.rmdir(os.path.join(directory, RUN))
    os.symlink(str(tmp_path), os.path.join(directory, RUN))  # planted while proxy owned it
    os.chown(directory, proxy.pw_uid, proxy.pw_gid)
    os.chmod(directory, 0o775)
    assert store.adopt("proxy-a", (proxy.pw_uid, proxy.pw_gid)) is True
    info = os.stat(directory)
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o755)
    run = os.lstat(os.path.join(directory, RUN))
    assert stat.S_ISDIR(run.st_mode) and run.st_uid == proxy.pw_uid
    assert os.stat(tmp_path).st_uid == 0 and outside.read_text() == SECRET  # the link's target
    assert store.adopt("proxy-a", (proxy.pw_uid, proxy.pw_gid)) is False
