"""README.md's Layout tree, taken from the Markdown (issue 37): every path it names exists, and
every top-level directory the repository tracks (hidden ones aside) is named.

A row is ``NAMES  description``: the names are the first column (26 characters wide); a name in
the description (a word ending in ``/`` or a file suffix) is looked up under the row's directory,
then its parent and the root, then anywhere below the row's directory (``controller/``'s
packages are in ``controller/egress_proxies_controller/``); ``<type>`` stands for any name.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess

from .markdown_blocks import ROOT, blocks

WIDTH = 26
_NAMED = re.compile(
    r"(?<![\w./<>-])([\w<>-][\w.<>-]*(?:/[\w<>-][\w.<>-]*)*(?:/|\.(?:py|ya?ml|sh|txt|env|rst|md)))(?![\w/])"
)


def _tree() -> list:
    (block,) = [b for b in blocks("README.md") if not b.language and b.text.startswith("galaxy.yml meta/")]
    return [(line[:WIDTH].split(), line[WIDTH:]) for line in block.text.splitlines() if line.strip()]


def _found(base: str, name: str) -> bool:
    pattern = name.replace("<type>", "*").rstrip("/")
    parent = os.path.dirname(base.rstrip("/"))
    for where in (base, parent, ""):
        if glob.glob(os.path.join(ROOT, where, pattern)):
            return True
    return bool(glob.glob(os.path.join(ROOT, base, "**", pattern), recursive=True))


def test_every_path_the_tree_names_exists():
    missing = []
    for names, description in _tree():
        for name in names:
            if not glob.glob(os.path.join(ROOT, name.rstrip("/"))):
                missing.append(name)
        base = names[0] if names[0].endswith("/") else ""
        missing += [
            "%s (in %s's row)" % (n, names[0]) for n in _NAMED.findall(description) if not _found(base, n)
        ]
    assert not missing, missing


def test_every_top_level_directory_is_named():
    tracked = subprocess.run(
        ["git", "-C", ROOT, "ls-files"], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    directories = {p.split("/")[0] for p in tracked if "/" in p and not p.startswith(".")}
    named = {name.split("/")[0] for names, _description in _tree() for name in names}
    assert directories - named == set(), "top-level directories README's Layout does not name"


def test_a_missing_path_is_noticed():
    """The lookup could pass by accepting anything."""
    assert not _found("plugins/", "no-such-thing.py") and not _found("hack/", "nowhere/")
    assert _found("plugins/module_utils/", "providers/<type>/") and _found("hack/", "collections.txt")
