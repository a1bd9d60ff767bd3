"""docs/testing.md's changelog fragment, taken from the Markdown (issue 37) and linted by
antsibull-changelog with this collection's changelogs/config.yaml, as ``hack/sanity.sh`` lints
every fragment; the fragment is written to a scratch file, never into changelogs/fragments/."""

from __future__ import annotations

import os
import subprocess
import sys

from .markdown_blocks import ROOT, blocks

LINT = os.path.join(os.path.dirname(sys.executable), "antsibull-changelog")


def _lint(path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [LINT, "lint", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_documented_fragment_passes_the_lint(tmp_path):
    (block,) = [b for b in blocks("docs/testing.md") if b.language == "yaml" and "bugfixes:" in b.text]
    fragment = tmp_path / "short-name.yml"
    fragment.write_text(block.text)
    proc = _lint(fragment)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_the_lint_refuses_an_unknown_section(tmp_path):
    """The check above could pass by accepting anything."""
    fragment = tmp_path / "bad.yml"
    fragment.write_text("---\nbugfix:\n  - proxy_gc - x.\n")
    proc = _lint(fragment)
    assert proc.returncode != 0 and "invalid section: bugfix" in proc.stdout, proc.stdout + proc.stderr
