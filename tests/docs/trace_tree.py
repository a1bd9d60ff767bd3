"""The span trees the provider pages draw, compared with a trace the provider really exported.

A page's tree (``├──``/``└──`` lines: a span name, then the attributes it carries) is read into
entries of (span, parent span, attribute keys). The tests of tests/contract/test_trace_*.py
capture a real trace (trace_capture.py) and hand it here: every span the page draws must be in
the trace under the parent drawn, carrying every attribute key drawn beside it, except keys the
page marks as conditional (``on failure``, ``(when ...)``). Counts and values (``201``,
``<pod>``, ``...``) are the page's illustration and are not compared.
"""

from __future__ import annotations

import dataclasses
import re

from .output_shape import one_block

_CONNECTOR = re.compile(r"[├└]── ")
_KEY = re.compile(r"^[a-z][a-z0-9_]*(?:\.[a-zA-Z0-9_]+)+$")
_CONDITIONAL = re.compile(r"\bon failure\b|\(when\b")


@dataclasses.dataclass
class Entry:
    """One span of a drawn tree: its column decides its parent."""

    column: int
    name: str
    parent: str
    keys: list
    conditional: list


def parse(text: str) -> list:
    """The entries of a drawn tree, in drawing order; the first line is the root."""
    entries: list = []
    for number, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        connector = _CONNECTOR.search(line)
        if number and not connector:  # a continuation of the previous span's attributes
            _add_keys(entries[-1], line.lstrip(" │"))
            continue
        column = connector.end() if connector else len(line) - len(line.lstrip())
        name, _space, rest = line[column:].partition(" ")
        parents = [e for e in entries if e.column < column]
        entry = Entry(column, name, parents[-1].name if parents else "", [], [])
        _add_keys(entry, rest)
        entries.append(entry)
    return entries


def _add_keys(entry: Entry, text: str) -> None:
    for chunk in text.split(","):
        conditional = bool(_CONDITIONAL.search(chunk))
        word = re.sub(r"\(.*?\)", "", chunk).strip().split(" ")[0]
        if _KEY.match(word):
            (entry.conditional if conditional else entry.keys).append(word)


def assert_trace_as_drawn(page: str, needle: str, spans: list) -> None:
    """The tree of ``page`` whose text contains ``needle`` is in the exported ``spans``."""
    block = one_block(page, needle)
    by_id = {s.span_id: s for s in spans}
    problems = []
    for entry in parse(block.text):
        found = [
            s
            for s in spans
            if s.name == entry.name
            and (entry.parent == "" or getattr(by_id.get(s.parent_id), "name", "") == entry.parent)
        ]
        if not found:
            problems.append("no span %s under %s" % (entry.name, entry.parent or "nothing"))
            continue
        keys = set().union(*(set(s.attributes) for s in found))
        missing = [key for key in entry.keys if key not in keys]
        if missing:
            problems.append("%s carries no %s (it has %s)" % (entry.name, missing, sorted(keys)))
    assert not problems, "%s differs from the exported trace:\n%s" % (block.where, "\n".join(problems))
