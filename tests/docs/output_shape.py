"""Compare a documented output block with real output by shape, not by value.

Values that differ from run to run stand for any value of their kind: proxy names
(``proxy-`` and 16 characters), IPv4 addresses, version numbers and ``...`` (anything). The
rest of each line must be exactly what the code prints, so a renamed field, a reworded message
or a dropped line in the code or in the doc fails the comparison.
"""

from __future__ import annotations

import re

from .markdown_blocks import Block, blocks

# A documented value of each kind, and the pattern it stands for.
_VALUES = re.compile(
    r"(?P<any>\.\.\.)|(?P<name>proxy-[a-z0-9]{16})|(?P<ip>\d+\.\d+\.\d+\.\d+)|(?P<version>\d+(?:\.\d+)+)"
)
_GENERAL = {
    "any": ".*",
    "name": r"proxy-[a-z0-9]{16}",
    "ip": r"\d+\.\d+\.\d+\.\d+",
    "version": r"\d+(?:\.\d+)+",
}


def one_block(path: str, needle: str) -> Block:
    """The one block of ``path`` containing ``needle``."""
    found = [b for b in blocks(path) if needle in b.text]
    assert len(found) == 1, "%s: %d blocks contain %r" % (path, len(found), needle)
    return found[0]


def shape(line: str) -> re.Pattern:
    """A documented line as a pattern: placeholders for the values that vary, the rest literal."""
    return re.compile(_pattern(line) + r"\Z")


def _pattern(line: str) -> str:
    parts, done = [], 0
    line = line.rstrip()
    for value in _VALUES.finditer(line):
        parts += [re.escape(line[done : value.start()]), _GENERAL[value.lastgroup]]
        done = value.end()
    return "".join(parts) + re.escape(line[done:])


def assert_lines_match(block: Block, real: list) -> None:
    """The real lines have the block's shape, line for line; a line of only ``...`` in the
    block stands for any number of real lines (cells or items the page elides)."""
    shown = [line for line in block.text.splitlines() if line.strip()]
    whole = "".join(r"(?:[^\n]*\n)*?" if line.strip() == "..." else _pattern(line) + r"\n" for line in shown)
    if re.fullmatch(whole, "".join(line.rstrip() + "\n" for line in real)):
        return
    wrong = [
        "doc: %r\nreal: %r" % (doc, got)
        for doc, got in zip(shown, real, strict=False)  # where they part, for the message
        if not shape(doc).match(got.rstrip())
    ]
    raise AssertionError(
        "%s does not match the real output:\n%s\n(%d lines shown, %d real:\n%s)"
        % (block.where, "\n".join(wrong), len(shown), len(real), "\n".join(real))
    )
