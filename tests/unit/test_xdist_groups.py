"""The main session's xdist scheduling (tests/xdist_groups.py): every file that uses the libvirt
test hypervisors in one unit of work, every other file a unit of its own, and a collection that
breaks that rule refused by name (instead of a second worker failing on the libvirt lock)."""

from __future__ import annotations

import glob
import os
import re
import types

import pytest
import xdist_groups

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_libvirt_files_share_one_scope_and_others_keep_their_own():
    assert xdist_groups.scope_of("tests/contract/test_libvirt.py::test_x", ROOT) == xdist_groups.LIBVIRT_GROUP
    assert (
        xdist_groups.scope_of("tests/integration/test_libvirt_guest.py::T::test_y[a]", ROOT)
        == xdist_groups.LIBVIRT_GROUP
    )
    assert xdist_groups.scope_of("tests/unit/test_config.py::test_z", ROOT) == "tests/unit/test_config.py"
    fake = "tests/contract/test_libvirt_fake.py"
    assert xdist_groups.scope_of(fake + "::t", ROOT) == fake


def test_every_file_whose_tests_take_the_libvirt_lock_is_in_the_group():
    """The source rule against the fixtures: each file naming a lock-taking fixture in a test's
    signature (or a LibvirtHost) is in the group."""
    signature = "|".join(sorted(xdist_groups.LIBVIRT_FIXTURES))
    pattern = re.compile(r"def test_\w+\([^)]*\b(%s)\b|LibvirtHost\(" % signature, re.S)
    for path in glob.glob(os.path.join(ROOT, "tests", "**", "test_*.py"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            if pattern.search(handle.read()):
                assert xdist_groups.uses_libvirt(path), path


def _item(path: str, fixtures: tuple):
    return types.SimpleNamespace(path=path, fixturenames=fixtures, module=types.ModuleType("m"))


def test_a_file_outside_the_group_that_takes_the_lock_fails_the_collection(tmp_path):
    stray = tmp_path / "test_stray.py"
    stray.write_text("def test_a(backend):\n    pass\n")
    with pytest.raises(pytest.UsageError, match=r"test_stray\.py"):
        xdist_groups.check([_item(str(stray), ("backend", "libvirt_host"))], str(tmp_path))
    xdist_groups.check([_item(str(stray), ("backend",))], str(tmp_path))  # no libvirt: fine
