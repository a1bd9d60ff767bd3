"""Issue 40 §3: root never runs, reads configuration from or writes under a path another user
can change. The one rule (helpers/path_trust.py) applied to the local provider's squidBinary and
stateDir and to the providers file, with real files and directories owned by ``nobody``."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError

NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown to nobody needs root")


def _wrapper(path, marker) -> str:
    """An executable that records being run: what an attacker's replacement would do."""
    path.write_text("#!/bin/sh\ntouch %s\nexit 0\n" % marker)
    path.chmod(0o755)
    return str(path)


def _local(tmp_path, **block):
    block.setdefault("stateDir", str(tmp_path / "state"))
    return {"providers": [{"name": "lab", "type": "local", "local": block}]}


def test_the_rule_names_who_could_change_the_path(tmp_path):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import path_trust

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    (theirs / "file").write_text("x")
    assert "belongs to uid 65534" in path_trust.unsafe_reason(str(theirs / "file"))
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # world-writable, no sticky bit
    (open_dir / "file").write_text("x")
    assert "writable by every user" in path_trust.unsafe_reason(str(open_dir / "file"))
    mine = tmp_path / "mine"
    mine.write_text("x")
    assert path_trust.unsafe_reason(str(mine), entry_too=True) == ""
    os.chown(mine, NOBODY, NOBODY)
    assert path_trust.unsafe_reason(str(mine)) == ""  # the directories alone are fine
    assert "belongs to uid 65534" in path_trust.unsafe_reason(str(mine), entry_too=True)
    os.chown(mine, 0, NOBODY)
    mine.chmod(0o664)
    assert "writable by group 65534" in path_trust.unsafe_reason(str(mine), entry_too=True)


@pytest.mark.parametrize("owned", ["file", "directory"])
def test_a_squid_binary_another_user_could_change_is_refused_naming_the_field(tmp_path, owned):
    binary_dir = tmp_path / "bin"
    binary_dir.mkdir()
    binary = _wrapper(binary_dir / "squid", tmp_path / "ran")
    os.chown(binary if owned == "file" else binary_dir, NOBODY, NOBODY)
    with pytest.raises(ConfigError) as caught:
        providers_file.parse(_local(tmp_path, squidBinary=binary))
    assert caught.value.problems[0].startswith("providers[0].local.squidBinary: ")
    assert "uid 65534" in str(caught.value)


def test_a_squid_binary_changed_hands_after_parsing_is_never_run(tmp_path):
    """The provider checks again where it runs the file: a create fails Permanent before
    anything is written, and the wrapper never ran as root."""
    marker = tmp_path / "ran"
    binary = _wrapper(tmp_path / "squid", marker)
    parsed = providers_file.parse(_local(tmp_path, squidBinary=binary))
    provider = registry.build(parsed.providers[0], parsed.installation)
    os.chown(binary, NOBODY, NOBODY)
    request = contract.CreateRequest(name="p1", uid="u-1", port=3128)
    with pytest.raises(errors.ProviderError) as caught:
        provider.create(request, Deadline(20))
    assert caught.value.error_class == errors.PERMANENT
    assert "local.squidBinary" in str(caught.value) and "uid 65534" in str(caught.value)
    assert not marker.exists()
    assert not (tmp_path / "state" / "instances" / "p1").exists()
    statuses = {s.target: s for s in provider.check(Deadline(10))}
    assert not statuses["squid"].ready and "uid 65534" in statuses["squid"].message
    assert not marker.exists()


@pytest.mark.parametrize("mode", ["owned by nobody", "world-writable"])
def test_a_state_dir_another_user_could_change_is_refused(tmp_path, mode):
    state = tmp_path / "state"
    state.mkdir()
    if mode == "owned by nobody":
        os.chown(state, NOBODY, NOBODY)
    else:
        state.chmod(0o777)
    with pytest.raises(ConfigError) as caught:
        providers_file.parse(_local(tmp_path, stateDir=str(state / "local")))
    assert caught.value.problems[0].startswith("providers[0].local.stateDir: ")
    with pytest.raises(ConfigError, match=r"providers\[0\]\.local\.stateDir: .* is refused"):
        providers_file.parse(_local(tmp_path, stateDir=str(state)))


@pytest.mark.parametrize("owned", ["file", "directory"])
def test_a_providers_file_another_user_could_change_is_refused(tmp_path, owned):
    directory = tmp_path / "etc"
    directory.mkdir()
    path = directory / "providers.yaml"
    path.write_text("providers:\n  - {name: lab, type: local, local: {stateDir: %s}}\n" % (tmp_path / "s"))
    assert providers_file.load_file(str(path)).providers[0].name == "lab"
    os.chown(path if owned == "file" else directory, NOBODY, NOBODY)
    with pytest.raises(ConfigError, match=r"providers file is refused: .*uid 65534"):
        providers_file.load_file(str(path))


def test_a_group_writable_providers_file_is_refused(tmp_path):
    path = tmp_path / "providers.yaml"
    path.write_text("providers: []\n")
    os.chown(path, 0, NOBODY)
    path.chmod(stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP)
    with pytest.raises(ConfigError, match="writable by group 65534"):
        providers_file.load_file(str(path))


def test_a_state_dir_made_on_first_use_in_a_sticky_directory_is_taken(tmp_path):
    """/tmp/proxies (docs/configuration.md): what root makes in a sticky directory is root's."""
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    parsed = providers_file.parse(_local(tmp_path, stateDir=str(sticky / "proxies")))
    assert parsed.providers[0].block.state_dir == str(sticky / "proxies")
