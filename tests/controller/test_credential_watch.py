"""A provider's credential files are part of its configuration: rotating the file a providers
entry names (a Secret's new kubeconfig or SSH key) is a change of that provider, counted in
``rotated`` (not ``changed``: its entry is the same), with a new ``changed_at`` and epoch."""

from __future__ import annotations

import os

import pytest
from egress_proxies_controller.config.credential_watch import credential_paths
from egress_proxies_controller.config.providers_file import ProvidersConfig

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import credential_files


def _write(path, data: bytes) -> None:
    """As kubelet updates a Secret mount: a new file renamed over the path (a new inode)."""
    tmp = str(path) + ".new"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def _config(tmp_path, clock):
    key = tmp_path / "kubeconfig"
    _write(key, b"token: one\n")
    path = tmp_path / "providers.yaml"
    path.write_bytes(
        b"installation: t\nproviders:\n"
        b"  - {name: k, type: kubernetes, kubernetes: {kubeconfig: %s}}\n"
        b"  - {name: l, type: local}\n" % str(key).encode()
    )
    config = ProvidersConfig(str(path), str(tmp_path / "private"), lambda _p, _n: [], clock=clock)
    return config, key


def test_the_first_version_is_a_change_of_every_provider(tmp_path):
    config, _key = _config(tmp_path, lambda: 100.0)
    assert config.refresh() and config.changed == {"k", "l"} and config.rotated == set()
    assert config.changed_at == {"k": 100.0, "l": 100.0} and config.epochs == {"k": 1, "l": 1}


def test_a_rotated_credential_file_is_a_change_of_its_provider_only(tmp_path):
    now = [100.0]
    config, key = _config(tmp_path, lambda: now[0])
    assert config.refresh()
    assert not config.refresh()  # nothing changed: nothing to plan
    now[0] = 200.0
    _write(key, b"token: two\n")
    assert config.refresh() and config.rotated == {"k"} and config.changed == set()
    assert config.changed_at == {"k": 200.0, "l": 100.0} and config.epochs == {"k": 2, "l": 1}
    assert not config.refresh()


def test_the_same_content_rewritten_is_no_change(tmp_path):
    config, key = _config(tmp_path, lambda: 100.0)
    assert config.refresh()
    _write(key, b"token: one\n")  # a new inode, the same bytes: kubelet's periodic resync
    assert not config.refresh() and config.epochs["k"] == 1


def test_a_file_gone_and_back_is_two_changes(tmp_path):
    """Unreadable is a state too: the Proxies latched while it was away are released when it returns."""
    config, key = _config(tmp_path, lambda: 100.0)
    assert config.refresh()
    os.rename(key, str(key) + ".away")
    assert config.refresh() and config.rotated == {"k"}
    os.rename(str(key) + ".away", key)
    assert config.refresh() and config.rotated == {"k"} and config.epochs["k"] == 3


def test_paths_are_found_at_any_depth():
    entry = {
        "name": "kvm",
        "type": "kvm",
        "kvm": {
            "sshKeyFile": "/s/key",
            "knownHostsFile": "/s/known_hosts",
            "hosts": [{"name": "h1", "sshKeyFile": "/s/h1"}],
            "images": {"debian": {"url": "http://127.0.0.1/x"}},
        },
    }
    assert credential_paths(entry) == ["/s/h1", "/s/key", "/s/known_hosts"]


@pytest.mark.parametrize("key", credential_files.FILE_KEYS)
def test_every_key_the_modules_read_a_credential_file_from_is_watched(key):
    assert credential_paths({"name": "p", "type": "t", "t": {key: "/s/file"}}) == ["/s/file"]
