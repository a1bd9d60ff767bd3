"""roles/controller/README.md names every CRD the role applies (issue 37: ProxyPool was missing)."""

from __future__ import annotations

import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_role_readme_lists_every_crd_the_role_applies():
    with open(os.path.join(ROOT, "roles", "controller", "vars", "main.yml"), encoding="utf-8") as handle:
        files = [name for name in yaml.safe_load(handle)["controller_base_files"] if name.startswith("crd/")]
    kinds = set()
    for name in files:
        with open(os.path.join(ROOT, "controller", "config", name), encoding="utf-8") as handle:
            kinds.add(yaml.safe_load(handle)["spec"]["names"]["kind"])
    with open(os.path.join(ROOT, "roles", "controller", "README.md"), encoding="utf-8") as handle:
        line = next(text for text in handle if "the CRDs (" in text)
    listed = set(re.findall(r"`(\w+)`", line))
    assert kinds and listed == kinds, "README lists %s, the role applies %s" % (sorted(listed), sorted(kinds))
