"""Another revision's tree, to run its controller beside this tree's in one bench run.

A bench that compares this tree with a revision (``--base REV``) needs that revision's
controller package and its collection (the modules its runs execute) on disk, run with this
tree's venv: ``git archive`` of the revision into a temporary directory, with an
``ansible_collections/crawl/egress_proxies`` link to it, as the venv's collections path links to
this tree. An archive, not a worktree: nothing is left in the repository's git directory.
"""

from __future__ import annotations

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export(rev: str, workdir: str) -> tuple:
    """(code, collections) of ``rev`` under ``workdir``: the tree for ``ControllerProcess.start``'s
    ``code`` and the directory for its ``collections``."""
    code = os.path.join(workdir, "tree")
    os.makedirs(code)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", code], input=archive, check=True)
    collections = os.path.join(workdir, "collections")
    namespace = os.path.join(collections, "ansible_collections", "crawl")
    os.makedirs(namespace)
    os.symlink(code, os.path.join(namespace, "egress_proxies"))
    return code, collections


def short(rev: str) -> str:
    """The revision's abbreviated commit, for labels (``main`` moves; the commit does not)."""
    return subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
