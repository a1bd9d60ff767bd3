"""Fenced code blocks of README.md and docs/*.md, read at test time.

The documentation tests never copy an example: they take it from the Markdown the user reads,
so a doc change that breaks an example fails the test. A block may be preceded by an HTML
comment ``<!-- doc-test: KIND: reason -->`` (KIND ``check-only`` or ``skip``) saying why it
cannot run here; the comment is invisible once rendered.
"""

from __future__ import annotations

import dataclasses
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_MARKER = re.compile(r"^<!--\s*doc-test:\s*(?P<kind>[\w-]+)\s*(?::\s*(?P<reason>.*?))?\s*-->\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its info string's language, its text and its marker."""

    path: str  # relative to the repository root
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    marker: str = ""  # "" (run it), "check-only" or "skip"
    reason: str = ""

    @property
    def where(self) -> str:
        return "%s:%d" % (self.path, self.line)


def markdown_files() -> list[str]:
    """README.md and every docs/*.md, relative to the root, sorted."""
    docs = sorted(
        os.path.join("docs", name) for name in os.listdir(os.path.join(ROOT, "docs")) if name.endswith(".md")
    )
    return ["README.md", *docs]


def blocks(path: str) -> list[Block]:
    """The fenced blocks of one Markdown file, with the doc-test marker just before each."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        marker, reason = _marker_before(lines, index)
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            body.append(lines[end][indent:] if lines[end][:indent].strip() == "" else lines[end])
            end += 1
        language = (opening.group("info").strip().split() or [""])[0]
        found.append(Block(path, index + 1, language, "\n".join(body) + "\n", marker, reason))
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    """Every fenced block of README.md and docs/*.md."""
    return [block for path in markdown_files() for block in blocks(path)]


def _marker_before(lines: list[str], index: int) -> tuple[str, str]:
    previous = index - 1
    while previous >= 0 and not lines[previous].strip():
        previous -= 1
    match = _MARKER.match(lines[previous].strip()) if previous >= 0 else None
    if not match:
        return "", ""
    return match.group("kind"), match.group("reason") or ""
