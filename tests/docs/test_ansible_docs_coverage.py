"""Issue 37: the Ansible and AWX pages' blocks were only syntax-checked, with nothing saying why
they did not run. Now each one runs in a test (classify.RUN_BY) or carries a check-only or skip
marker with the reason; output and diagrams (no language) are compared where a test makes them.
Plus what can be checked of the one AWX block that needs a registry and a container engine.
"""

from __future__ import annotations

import glob
import os
import re

import pytest
import yaml

from . import tally
from .markdown_blocks import ROOT, blocks

PAGES = (
    "docs/playbooks.md",
    "docs/modules.md",
    "docs/awx.md",
    "docs/gcp-provider.md",
    "docs/libvirt-provider.md",
    "docs/local-provider.md",
)


@pytest.mark.parametrize("page", PAGES)
def test_every_block_of_the_page_runs_or_says_why_not(page):
    silent = []
    for block in blocks(page):
        outcome, why = tally.outcome(block)
        if outcome == "checked" and not (block.marker == "check-only" and block.reason):
            silent.append("%s (%s)" % (block.where, why))
    assert silent == [], "blocks neither run nor marked with a reason: %s" % silent


def test_the_execution_environment_block_builds_the_tarball_its_recipe_takes():
    (block,) = [b for b in blocks("docs/awx.md") if "ansible-builder build" in b.text]
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        galaxy = yaml.safe_load(handle)
    shown = re.search(r"collection build --output-path (\S+)\s+#\s*(\S+)", block.text)
    tarball = "%s%s-%s-<version>.tar.gz" % (shown.group(1), galaxy["namespace"], galaxy["name"])
    assert shown.group(2) == tarball
    recipe = re.search(r"ansible-builder build -f (\S+)", block.text).group(1)
    with open(os.path.join(ROOT, recipe), encoding="utf-8") as handle:
        text = handle.read()
    wanted = "%s%s-%s-*.tar.gz" % (shown.group(1), galaxy["namespace"], galaxy["name"])
    assert wanted in text, "%s does not take %s" % (recipe, wanted)
    assert glob.glob(os.path.join(ROOT, recipe))
