"""Every fenced block of README.md and docs/*.md, taken from the Markdown at test time (issue 37).

A block that a test of this directory runs for real is counted as run there; every other one is
checked by the validator of what it is (tests/docs/classify.py): a doc change that breaks a
playbook's syntax, a providers file's schema, a shell command's syntax, a manifest's or a YAML
file's parse, or a Python example's syntax fails here. ``<!-- doc-test: skip: reason -->``
before a block leaves it out, with the reason in the closing note.
"""

from __future__ import annotations

import os

import pytest

from . import awx_stand_in, classify, tally
from .markdown_blocks import ROOT, all_blocks

BLOCKS = all_blocks()


@pytest.fixture(scope="module")
def collections(tmp_path_factory) -> str:
    """The venv's collections, after the awx.awx stand-in the AWX playbooks name."""
    stand_in = awx_stand_in.install(tmp_path_factory.mktemp("i37-docs-awx"))
    return "%s:%s" % (stand_in, os.path.join(ROOT, ".venv", "collections"))


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_block(block, collections):
    if block.marker == "skip":
        assert block.reason, "%s: a doc-test skip marker needs a reason" % block.where
        return
    assert block.marker in ("", "check-only"), "%s: unknown doc-test marker %r" % (block.where, block.marker)
    assert block.reason or not block.marker, "%s: a doc-test check-only marker needs a reason" % block.where
    what = classify.kind(block)
    problem = classify.check(block, what, collections)
    assert not problem, "%s (%s): %s" % (block.where, what, problem)
    assert tally.outcome(block)[0] in ("ran", "compared", "checked", "not checked")


def test_every_block_run_by_a_test_exists():
    """A RUN_BY or COMPARED_BY entry whose block left the docs would count a block that is no
    longer run or compared."""
    for (path, needle), test in {**classify.RUN_BY, **classify.COMPARED_BY}.items():
        assert any(b.path == path and needle in b.text for b in BLOCKS), (path, needle, test)
        assert os.path.isfile(os.path.join(ROOT, test)), test


def test_a_block_no_test_runs_says_why():
    """Unmarked means run (issue 37): a block with a language that no test runs (classify.RUN_BY)
    carries a check-only or skip marker with its reason."""
    unmarked = [
        "%s (%s)" % (b.where, classify.kind(b))
        for b in BLOCKS
        if not b.marker and tally.outcome(b)[0] == "checked"
    ]
    assert not unmarked, "run these blocks in a test or mark them with the reason: %s" % unmarked


def test_a_marked_block_is_not_run():
    """A check-only or skip marker on a block a test runs would under-report what runs."""
    both = [b.where for b in BLOCKS if b.marker and classify.run_by(b)]
    assert not both, "these blocks run (classify.RUN_BY): drop their doc-test marker: %s" % both
