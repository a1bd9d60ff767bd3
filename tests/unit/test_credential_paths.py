"""Issue 28 §1, credential reads: root never reads a credential file (kubeconfig, gcp
``credentialsFile``, libvirt ``sshKeyFile`` and ``knownHostsFile``) through a path another user
can change, on real files and directories. A less privileged user who can swap an entry on the
path could point root at another credential it holds (used then as the provider's identity);
such a path is refused, Permanent, naming the directory, before the file is opened."""

from __future__ import annotations

import os
import pwd

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import credential_files
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import (
    classify as gcp_classify,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import (
    classify as kubernetes_classify,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    classify as libvirt_classify,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import libvirt_backend


@pytest.fixture
def proxy():
    assert os.geteuid() == 0, "other users' directories are made with chown: run as root"
    return pwd.getpwnam("proxy")


@pytest.fixture
def secret(tmp_path):
    """Another credential root holds: what a swapped link would point root at."""
    path = tmp_path / "root-secret"
    path.write_text("apiVersion: v1\nkind: Config\n")
    os.chmod(path, 0o600)
    return path


def _refused(path: str, what: str = "kubeconfig"):
    with pytest.raises(Exception) as refused:
        credential_files.require_readable(path, what)
    assert type(refused.value).__name__ == "CredentialsUnsafe", refused.value
    assert path in str(refused.value) and what in str(refused.value)
    return refused.value


def test_a_file_in_a_directory_another_user_owns_is_refused(tmp_path, proxy, secret):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, proxy.pw_uid, proxy.pw_gid)
    kubeconfig = theirs / "kubeconfig"
    os.symlink(str(secret), str(kubeconfig))  # what that user can do at any time
    exc = _refused(str(kubeconfig))
    assert str(theirs) in str(exc) and "uid %d" % proxy.pw_uid in str(exc)
    assert kubernetes_classify.classify(exc) == errors.PERMANENT
    assert gcp_classify.classify(exc) == errors.PERMANENT
    assert libvirt_classify.classify("create", exc) == errors.PERMANENT


def test_another_users_link_in_a_sticky_world_writable_directory_is_refused(tmp_path, proxy, secret):
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    planted = shared / "key.json"
    os.symlink(str(secret), str(planted))
    os.lchown(planted, proxy.pw_uid, proxy.pw_gid)  # made by that user before root's run
    assert "writable by every user" in str(_refused(str(planted), "credentialsFile"))


def test_a_world_writable_directory_without_the_sticky_bit_is_refused(tmp_path, secret):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    key = open_dir / "id_ed25519"
    key.write_text("key")
    _refused(str(key), "sshKeyFile")
    with pytest.raises(Exception, match="writable by every user"):
        libvirt_backend.check_credentials(str(key), "")


def test_root_owned_entries_are_read(tmp_path, secret):
    """A trusted path still works: a root-owned file or link in a root-owned directory, and a
    root-owned link in a sticky world-writable one (as in /tmp, or a mounted Secret's ..data)."""
    credential_files.require_readable(str(secret), "kubeconfig")
    shared = tmp_path / "sticky"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    link = shared / "kubeconfig"
    os.symlink(str(secret), str(link))
    credential_files.require_readable(str(link), "kubeconfig")
    assert credential_files.unsafe_reason(str(tmp_path / "missing" / "file")) == ""
